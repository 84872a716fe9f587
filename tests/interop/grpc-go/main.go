// kgpu-grpc-go: the kubelet's own gRPC (grpc-go, Debian's golang-google-grpc-dev) as a small
// generic peer for kgpu's interop tests. The tests serialize requests and check answers with their
// C++ protobuf classes; this program only moves bytes, so it needs no generated code: a raw-bytes
// codec is registered under the name "proto", the content-subtype every kubelet sends.
//
// Usage:
//
//	kgpu-grpc-go client --socket PATH --style old|new|unix --method /pkg.Service/Method
//	                    [--request-file FILE | --request HEX] [--stream [--count N] [--until-stdin-eof]]
//	                    [--timeout DURATION]
//	kgpu-grpc-go server --socket PATH [--respond /pkg.Service/Method=HEX | =@FILE]...
//
// Output is line-based on stdout (each line written whole, at once, so a reader can follow a
// long-lived stream message by message); see client.go and server.go. Exit status: 0 for an OK
// status (or a stream the client ended itself), 1 for any other gRPC status, 2 for a usage error.
package main

import (
	"fmt"
	"os"
	"sync"
)

// out writes one whole line per call: os.Stdout is unbuffered, so every line reaches the file at
// once, and the mutex keeps the server's concurrent handlers from interleaving.
var outMu sync.Mutex

func out(format string, args ...interface{}) {
	line := fmt.Sprintf(format, args...) + "\n"
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.WriteString(line)
}

func usage(problem string) {
	fmt.Fprintf(os.Stderr, "kgpu-grpc-go: %s\n", problem)
	fmt.Fprintf(os.Stderr, "usage: kgpu-grpc-go client --socket PATH --style old|new|unix --method /pkg.Service/Method "+
		"[--request-file FILE | --request HEX] [--stream [--count N] [--until-stdin-eof]] [--timeout DURATION]\n"+
		"       kgpu-grpc-go server --socket PATH [--respond /pkg.Service/Method=HEX|@FILE]...\n")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage("missing mode")
	}
	switch os.Args[1] {
	case "client":
		os.Exit(runClient(os.Args[2:]))
	case "server":
		os.Exit(runServer(os.Args[2:]))
	default:
		usage("unknown mode " + os.Args[1])
	}
}
