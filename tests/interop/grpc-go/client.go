package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Client output on stdout, one line each:
//
//	msg <hex>              every response message, in order, as soon as it arrives
//	status <code> <text>   the call's final gRPC status (always the last line, unless:)
//	stopped <n>            the client ended a stream itself after n messages (--count or stdin EOF)
//
// stderr says which target and :authority the chosen dial style uses.

// dial connects the way the kubelet generation named by style does.
//
//	old:  kubelets 1.19-1.25 (device manager, plugin manager): the bare socket path as target with a
//	      unix context dialer, so grpc-go's passthrough resolver makes the path the :authority.
//	new:  kubelets >= 1.26: the same plus WithAuthority("localhost") (Kubernetes PR 112597).
//	unix: a unix:// target and grpc-go's own dialer, as most other grpc-go programs dial.
func dial(ctx context.Context, socket, style string) (*grpc.ClientConn, error) {
	unixDialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", addr)
	})
	opts := []grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock()}
	target := socket
	authority := socket
	switch style {
	case "old":
		opts = append(opts, unixDialer)
	case "new":
		opts = append(opts, unixDialer, grpc.WithAuthority("localhost"))
		authority = "localhost"
	case "unix":
		abs, err := filepath.Abs(socket)
		if err != nil {
			return nil, err
		}
		// grpc-go 1.33 registers no "unix" resolver: the target falls back to passthrough, its
		// default dialer parses the unix:// URL, and a "unix:" target gets :authority localhost.
		target = "unix://" + abs
		authority = "localhost"
	default:
		usage("unknown --style " + style)
	}
	fmt.Fprintf(os.Stderr, "kgpu-grpc-go: style %s: target %q, :authority %q\n", style, target, authority)
	return grpc.DialContext(ctx, target, opts...)
}

// statusOf turns any error of a dial or call into a gRPC code and text.
func statusOf(err error) (codes.Code, string) {
	switch {
	case err == nil:
		return codes.OK, ""
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, err.Error()
	case errors.Is(err, context.Canceled):
		return codes.Canceled, err.Error()
	}
	s := status.Convert(err)
	return s.Code(), s.Message()
}

// finish prints the status line and returns the exit status.
func finish(err error, what string) int {
	code, text := statusOf(err)
	if what != "" && err != nil {
		text = what + ": " + text
	}
	out("status %d %s", int(code), strings.ReplaceAll(text, "\n", " "))
	if code != codes.OK {
		return 1
	}
	return 0
}

func runClient(args []string) int {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	socket := fs.String("socket", "", "the unix socket to dial")
	style := fs.String("style", "old", "dial style: old (kubelet 1.19-1.25), new (kubelet >= 1.26), unix (unix:// target)")
	method := fs.String("method", "", "full method name, /package.Service/Method")
	requestHex := fs.String("request", "", "request message, hex (default: empty message)")
	requestFile := fs.String("request-file", "", "file holding the serialized request message")
	stream := fs.Bool("stream", false, "server-streaming call: print every message until the stream ends")
	count := fs.Int("count", 0, "with --stream: end the stream after this many messages (0: never)")
	untilEOF := fs.Bool("until-stdin-eof", false, "with --stream: end the stream when stdin closes")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline for dial and call together")
	fs.Parse(args)
	if *socket == "" || *method == "" {
		usage("client needs --socket and --method")
	}
	request, err := hex.DecodeString(*requestHex)
	if err != nil {
		usage("--request is not hex: " + err.Error())
	}
	if *requestFile != "" {
		if request, err = ioutil.ReadFile(*requestFile); err != nil {
			usage(err.Error())
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := dial(ctx, *socket, *style)
	if err != nil {
		return finish(err, "dial "+*socket)
	}
	defer conn.Close()

	if !*stream {
		var response []byte
		if err := conn.Invoke(ctx, *method, &request, &response); err != nil {
			return finish(err, "")
		}
		out("msg %s", hex.EncodeToString(response))
		return finish(nil, "")
	}

	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	if *untilEOF {
		go func() {
			io.Copy(ioutil.Discard, os.Stdin)
			stop()
		}()
	}
	s, err := conn.NewStream(streamCtx, &grpc.StreamDesc{ServerStreams: true}, *method)
	if err != nil {
		return finish(err, "")
	}
	if err := s.SendMsg(&request); err != nil && err != io.EOF {
		return finish(err, "")
	}
	if err := s.CloseSend(); err != nil {
		return finish(err, "")
	}
	received := 0
	for {
		var message []byte
		err := s.RecvMsg(&message)
		if err == io.EOF {
			return finish(nil, "")
		}
		if err != nil {
			if streamCtx.Err() == context.Canceled && ctx.Err() == nil {
				out("stopped %d", received) // stdin closed: the client ended the stream
				return 0
			}
			return finish(err, "")
		}
		out("msg %s", hex.EncodeToString(message))
		received++
		if *count > 0 && received >= *count {
			out("stopped %d", received)
			return 0
		}
	}
}
