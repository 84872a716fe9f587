#pragma once
// Device metadata (kgpu.dra.deviceMetadata, KEP-5304) around one driver's claim handler: a claim's
// metadata files are written once its prepare (and sharing) succeeded, and removed when it is
// unprepared. Here, not in dra/claims: the claim lifecycle does not depend on what pods are told
// (dra/health), and the composition root decides whether they are told anything.
#include "dra/claims/claim_handler.h"
#include "dra/claims/claim_store.h"
#include "dra/health/metadata_files.h"

namespace kgpu::dra {

// `inner` with `metadata` written and removed; both pointers outlive the handler. A claim whose
// files cannot be written still works (its containers only miss the document: logged); a failed
// removal fails the unprepare, so the kubelet's retry removes them.
ClaimHandler with_device_metadata(ClaimHandler inner, const ClaimStore* store, health::MetadataFiles* metadata);

}  // namespace kgpu::dra
