package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Server output on stdout, one line each:
//
//	listening <socket>                              once the socket accepts connections
//	call <method> request=<hex> authority=<value>   every call, before it is answered
//
// Every method answers one response message: the bytes --respond gives for it (hex, or @FILE read
// again at each call, so a test can change the answer while the server runs), else an empty
// message. This plays the kubelet's Registration and PodResources servers.

type responses map[string]string

func (r responses) String() string { return fmt.Sprint(map[string]string(r)) }

func (r responses) Set(v string) error {
	eq := strings.Index(v, "=")
	if eq <= 0 {
		return fmt.Errorf("want /pkg.Service/Method=HEX or =@FILE, got %q", v)
	}
	r[v[:eq]] = v[eq+1:]
	return nil
}

func (r responses) answer(method string) ([]byte, error) {
	v := r[method]
	if strings.HasPrefix(v, "@") {
		return ioutil.ReadFile(v[1:])
	}
	return hex.DecodeString(v)
}

func runServer(args []string) int {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	socket := fs.String("socket", "", "the unix socket to serve")
	answers := responses{}
	fs.Var(answers, "respond", "METHOD=HEX or METHOD=@FILE: the response message for METHOD (repeatable)")
	fs.Parse(args)
	if *socket == "" {
		usage("server needs --socket")
	}
	for _, v := range answers {
		if !strings.HasPrefix(v, "@") {
			if _, err := hex.DecodeString(v); err != nil {
				usage("--respond value is not hex: " + err.Error())
			}
		}
	}
	os.Remove(*socket) // as the kubelet does with a stale socket
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kgpu-grpc-go: listen %s: %v\n", *socket, err)
		return 1
	}
	handler := func(_ interface{}, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		var request []byte
		if err := stream.RecvMsg(&request); err != nil {
			return err
		}
		authority := ""
		if md, ok := metadata.FromIncomingContext(stream.Context()); ok && len(md[":authority"]) > 0 {
			authority = md[":authority"][0]
		}
		out("call %s request=%s authority=%s", method, hex.EncodeToString(request), authority)
		response, err := answers.answer(method)
		if err != nil {
			return fmt.Errorf("kgpu-grpc-go: no answer for %s: %v", method, err)
		}
		return stream.SendMsg(&response)
	}
	server := grpc.NewServer(grpc.UnknownServiceHandler(handler))
	out("listening %s", *socket)
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "kgpu-grpc-go: serve: %v\n", err)
		return 1
	}
	return 0
}
