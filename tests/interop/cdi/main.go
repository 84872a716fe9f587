// kgpu-cdi-check judges CDI spec folders with the CDI project's own Go library
// (github.com/container-orchestrated-devices/container-device-interface/pkg/cdi, Debian's
// golang-github-container-orchestrated-devices-container-device-interface-dev), the code that
// containerd, CRI-O and podman use to read the specs kgpu writes. It loads every spec in the given
// folders, reports each error the library found, lists the qualified device names it knows and
// injects the devices asked for into an empty OCI runtime spec, printing the result.
//
//	kgpu-cdi-check --spec-dir DIR [--spec-dir DIR ...] [--device VENDOR/CLASS=NAME ...]
//	               [--annotation KEY=VALUE ...] [--fake-nodes]
//
// --annotation hands the library a container annotation as a device plugin's Allocate returns it
// (cdi-annotations): cdi.ParseAnnotations takes the names from it, as containerd does, and they are
// injected after the --device names. The key is also checked against the library's own key rules
// (cdi.AnnotationKey: "cdi.k8s.io/" + plugin + "_" + device ID, at most 63 characters).
//
// stdout is one JSON object (always written, also on failure):
//
//	specDirs     the folders, in priority order
//	specErrors   {spec file or folder: [the library's messages]}; any entry fails the run
//	devices      every qualified device name the library resolved from the specs
//	requested    the --device names, in order, then those the annotations name
//	annotationErrors  what the library found wrong with the --annotation keys and values
//	unresolved   those the library could not resolve
//	injectError  the library's error when resolving or injecting failed
//	hostNodes    every device node of the requested devices and their specs' common edits:
//	             path, hostPath and what the host path is (char, block, fifo, regular, missing,
//	             other); standIn: true where --fake-nodes stood in for a regular file (see below)
//	oci          the OCI runtime spec after injection (env, linux.devices, linux.resources.devices,
//	             mounts, hooks): it started empty, so everything in it came from the specs
//
// Exit status: 0 all well; 1 the library reported spec errors; 2 a requested name did not resolve or
// an annotation is malformed; 3 injection failed; 64 usage.
//
// Device nodes: injecting a node whose spec leaves out its type or major number makes the library
// stat the host path (runc's DeviceFromPath) and copy type, major and minor from it; a path that is
// no device node fails the injection ("not a device node"), as it would in a runtime. Test fixtures
// cannot hold real device nodes without privileges, so their nodes are regular files. --fake-nodes
// marks such nodes (a regular file at the host path, nothing else) as character devices with the
// major number -1 before injecting, which the library then takes as given: everything else is still
// the library's own work, and hostNodes says which nodes were stood in for. A host path that is
// missing is never stood in for: the library's error stands.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	cdispecs "github.com/container-orchestrated-devices/container-device-interface/specs-go"
	oci "github.com/opencontainers/runtime-spec/specs-go"
)

// standInMajor is the major number given to a regular file stood in for a device node.
const standInMajor = -1

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type hostNode struct {
	Path     string `json:"path"`
	HostPath string `json:"hostPath"`
	HostKind string `json:"hostKind"`
	StandIn  bool   `json:"standIn"`
}

type report struct {
	SpecDirs         []string            `json:"specDirs"`
	SpecErrors       map[string][]string `json:"specErrors"`
	AnnotationErrors []string            `json:"annotationErrors"`
	Devices          []string            `json:"devices"`
	Requested        []string            `json:"requested"`
	Unresolved       []string            `json:"unresolved"`
	InjectError      string              `json:"injectError,omitempty"`
	HostNodes        []hostNode          `json:"hostNodes"`
	OCI              *oci.Spec           `json:"oci,omitempty"`
}

// hostKind says what the host path of a device node is, without following a last symlink (as runc
// does not).
func hostKind(path string) string {
	info, err := os.Lstat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return "missing"
		}
		return "unreadable"
	}
	mode := info.Mode()
	switch {
	case mode&os.ModeDevice != 0 && mode&os.ModeCharDevice != 0:
		return "char"
	case mode&os.ModeDevice != 0:
		return "block"
	case mode&os.ModeNamedPipe != 0:
		return "fifo"
	case mode.IsRegular():
		return "regular"
	}
	return "other"
}

// collectNodes lists the device nodes injecting `names` touches (each spec's common edits once,
// then each device's own), standing in for regular files when fake is set.
func collectNodes(cache *cdi.Cache, names []string, fake bool) []hostNode {
	nodes := []hostNode{}
	seenSpec := map[*cdi.Spec]bool{}
	add := func(list []*cdispecs.DeviceNode) {
		for _, n := range list {
			hostPath := n.HostPath
			if hostPath == "" {
				hostPath = n.Path
			}
			node := hostNode{Path: n.Path, HostPath: hostPath, HostKind: hostKind(hostPath)}
			// The library stats only where the spec leaves the type or major number out.
			wouldStat := n.Type == "" || (n.Major == 0 && n.Type != "p")
			if fake && wouldStat && node.HostKind == "regular" {
				if n.Type == "" {
					n.Type = "c"
				}
				n.Major = standInMajor
				node.StandIn = true
			}
			nodes = append(nodes, node)
		}
	}
	for _, name := range names {
		dev := cache.GetDevice(name)
		if dev == nil {
			continue
		}
		if spec := dev.GetSpec(); !seenSpec[spec] {
			seenSpec[spec] = true
			add(spec.ContainerEdits.DeviceNodes)
		}
		add(dev.ContainerEdits.DeviceNodes)
	}
	return nodes
}

func main() {
	var dirs, devices, annotations listFlag
	flag.Var(&dirs, "spec-dir", "a CDI spec folder (repeatable; later folders take priority, as in the library)")
	flag.Var(&devices, "device", "a fully qualified CDI device name to inject (repeatable)")
	flag.Var(&annotations, "annotation", "a container annotation KEY=VALUE naming CDI devices (repeatable)")
	fake := flag.Bool("fake-nodes", false, "stand in for device nodes whose host path is a regular file (test fixtures)")
	flag.Parse()
	if len(dirs) == 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kgpu-cdi-check --spec-dir DIR [--spec-dir DIR ...] [--device NAME ...] [--annotation KEY=VALUE ...] [--fake-nodes]")
		os.Exit(64)
	}

	annotationErrors := []string{}
	byKey := map[string]string{}
	for _, a := range annotations {
		key, value, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "kgpu-cdi-check: --annotation wants KEY=VALUE, got", a)
			os.Exit(64)
		}
		byKey[key] = value
		// The library's rules for a key: what AnnotationKey builds from the plugin and device ID
		// on either side of the first '_' must be the key itself.
		name := strings.TrimPrefix(key, cdi.AnnotationPrefix)
		plugin, id, _ := strings.Cut(name, "_")
		if !strings.HasPrefix(key, cdi.AnnotationPrefix) {
			annotationErrors = append(annotationErrors, fmt.Sprintf("key %q lacks the prefix %q: the library ignores it", key, cdi.AnnotationPrefix))
		} else if built, err := cdi.AnnotationKey(plugin, id); err != nil {
			annotationErrors = append(annotationErrors, fmt.Sprintf("key %q: %v", key, err))
		} else if built != key {
			annotationErrors = append(annotationErrors, fmt.Sprintf("key %q is not one the library builds (it builds %q)", key, built))
		}
	}
	if len(byKey) > 0 {
		_, named, err := cdi.ParseAnnotations(byKey)
		if err != nil {
			annotationErrors = append(annotationErrors, err.Error())
		}
		devices = append(devices, named...)
	}
	for _, e := range annotationErrors {
		fmt.Fprintln(os.Stderr, "kgpu-cdi-check: annotation:", e)
	}

	// No auto-refresh: the cache is read once, and a stand-in set on its nodes stays for the
	// injection (an auto-refresh could reload the files between the two).
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kgpu-cdi-check: cdi.NewCache:", err)
		os.Exit(1)
	}

	out := report{
		SpecDirs:         cache.GetSpecDirectories(),
		SpecErrors:       map[string][]string{},
		AnnotationErrors: annotationErrors,
		Devices:          cache.ListDevices(),
		Requested:        append([]string{}, devices...),
		Unresolved:       []string{},
	}
	if out.Devices == nil {
		out.Devices = []string{}
	}
	status := 0
	for path, errs := range cache.GetErrors() {
		for _, e := range errs {
			out.SpecErrors[path] = append(out.SpecErrors[path], e.Error())
			fmt.Fprintf(os.Stderr, "kgpu-cdi-check: spec error: %s: %v\n", path, e)
		}
	}
	if len(out.SpecErrors) > 0 {
		status = 1
	} else if len(annotationErrors) > 0 {
		status = 2
	}

	if len(devices) > 0 {
		out.HostNodes = collectNodes(cache, devices, *fake)
		// An empty container spec, as a runtime has it before CDI edits: a process and a Linux section.
		spec := &oci.Spec{
			Version: oci.Version,
			Process: &oci.Process{Cwd: "/", Args: []string{"sh"}},
			Root:    &oci.Root{Path: "rootfs"},
			Linux:   &oci.Linux{},
		}
		unresolved, err := cache.InjectDevices(spec, devices...)
		if unresolved != nil {
			out.Unresolved = unresolved
		}
		if err != nil {
			out.InjectError = err.Error()
			fmt.Fprintln(os.Stderr, "kgpu-cdi-check:", err)
			if status == 0 {
				if len(unresolved) > 0 {
					status = 2
				} else {
					status = 3
				}
			}
		} else {
			out.OCI = spec
		}
	}
	if out.HostNodes == nil {
		out.HostNodes = []hostNode{}
	}
	sort.Strings(out.Devices)

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "kgpu-cdi-check: writing the report:", err)
		os.Exit(1)
	}
	os.Exit(status)
}
