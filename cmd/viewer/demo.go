package main

// demoTrace returns the trace the library holds on first start, so that
// the very first page shows a timeline: its file name and content. It
// returns nil until the project's writers produce a demo file to embed
// here (e.g. //go:embed over testdata made by the CPEL or NetTrace
// writer).
func demoTrace() (name string, data []byte) {
	return "", nil
}
