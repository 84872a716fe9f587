#pragma once
// The daemon's optional parts, plugged into server::Daemon by `kgpu plugin`: metrics, the health
// monitor, the sysfs health watcher, the node-labels writer and the CDI spec writer, one file each.
// Each is an observer of applied plans (Daemon::on_plan_changed, called on the daemon's loop
// thread), so each re-evaluates on every inventory or config change instead of on a timer.
#include "cli/cdi_writer.h"
#include "cli/health_wiring.h"
#include "cli/labels_writer.h"
#include "cli/metrics_events.h"
#include "cli/sysfs_health_watcher.h"
