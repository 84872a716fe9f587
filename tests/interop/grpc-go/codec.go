package main

import (
	"fmt"

	"google.golang.org/grpc/encoding"
)

// rawCodec passes message bytes through untouched. Registered as "proto" it replaces grpc-go's
// protobuf codec for this process, so what goes on the wire is exactly `application/grpc` with the
// bytes the test serialized, as a kubelet sends it.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	// grpc-go may reuse its receive buffer: keep a copy.
	*b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// Package initialisation runs after grpc's own (which registers the protobuf codec), so this wins.
func init() { encoding.RegisterCodec(rawCodec{}) }
