package main

import _ "embed"

//go:generate go run ./internal/demogen -o demo.nettrace

// demoNettrace is the demo trace, written by internal/demogen with the
// project's NetTrace v6 writer.
//
//go:embed demo.nettrace
var demoNettrace []byte

// demoTrace returns the trace the library holds on first start, so that
// the very first page shows a timeline: its file name and content.
func demoTrace() (name string, data []byte) {
	return "demo-shop.nettrace", demoNettrace
}
