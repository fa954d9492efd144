// Command viewer is a web timeline viewer for .NET EventPipe traces
// (.nettrace, .netperf), VPP event logs (CPEL, elog) and Linux perf.data
// tracepoint recordings.
//
// Usage:
//
//	viewer [serve] [flags] [FILE...]   start the viewer (default)
//	viewer record [--] CMD ARGS...     record CMD with perf, watched live
//	viewer stats [--json] FILE...      summary of a trace (of each)
//	viewer dump [--where Q] FILE...    every event as JSON Lines (several files merged)
//	viewer export --format chrome FILE events as Chrome trace events
//	viewer report gc|exceptions FILE   .NET GC and exception tables
//	viewer stacks [--collapsed] FILE   sampled stacks, aggregated
//	viewer bench FILE | --generate N   index and query benchmark
//	viewer spans [--summary] FILE      derived slices as JSON Lines
//	viewer diff [--json] A B           two traces (or ranges) compared
//	viewer attach PID [--output FILE]  trace a running .NET process
//
// See README.md for the flags and output schemas.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/cpel"
	"viewer/trace/elog"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/wrap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "viewer:", err)
		}
		os.Exit(1)
	}
}

// formats lists the trace formats the viewer reads, in sniffing order.
// perf.data's .NET runtime user_events are decoded with NetTrace's
// metadata and payload decoder, plugged in here.
func formats() []trace.Format {
	return []trace.Format{
		nettrace.Format{},
		cpel.Format{},
		elog.Format{},
		perf.Format{DotNet: func() perf.DotNetDecoder { return nettrace.NewUserEvents() }},
	}
}

// symbolSource returns what names the stack frames of the trace r reads
// (r is the format's own reader): the managed method map, learnt from the
// trace's own runtime events, for .NET traces and for .NET user_events in
// perf.data, and for perf.data call chains the context perf recorded each
// address in; nil for formats whose stacks nothing names.
func symbolSource(r trace.Reader) render.SymbolSource {
	switch r.Meta().Format {
	case "nettrace", "netperf":
		return clr.NewSymbols()
	case "perf":
		if p, ok := r.(*perf.Reader); ok {
			return perfSymbols{clr.NewSymbols(), p}
		}
		return clr.NewSymbols()
	}
	return nil
}

// perfSymbols names the frames of perf.data call chains: managed methods
// of .NET user_events from the CLR method map, the other addresses by
// their context ("[kernel.kallsyms]!0x…", "[user]!0x…"), as the markers of
// the call chain said.
type perfSymbols struct {
	*clr.Symbols
	r *perf.Reader
}

func (s perfSymbols) Symbolize(pid int64, t trace.Time, addr uint64) (trace.Frame, bool) {
	f, ok, _, _ := s.SymbolizeSpan(pid, t, addr)
	return f, ok
}

func (s perfSymbols) SymbolizeSpan(pid int64, t trace.Time, addr uint64) (f trace.Frame, ok bool, from, to trace.Time) {
	if f, ok, from, to = s.Symbols.SymbolizeSpan(pid, t, addr); ok {
		return f, ok, from, to
	}
	if m, known := s.r.FrameModule(addr); known {
		// A context never changes: the name holds for the whole span
		// the method map gave (where no method held addr).
		return trace.Frame{Addr: addr, Module: m}, true, from, to
	}
	return f, ok, from, to
}

// command is one subcommand of viewer.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "[flags] [FILE... | - | --follow FILE]   start the viewer (the default command); - shows standard input live", runServe},
		{"record", "[--event EV]... [--output FILE] [--] [CMD ARGS...]  record with perf and watch it live", runRecord},
		{"stats", "[--json] FILE      summary of a trace", runStats},
		{"dump", "[--where Q] FILE   every event (or those a query selects) as JSON Lines", runDump},
		{"stacks", "[--collapsed] FILE  sampled stacks, aggregated", runStacks},
		{"export", "[--format F] [--where Q] FILE  events as Chrome trace events (or JSON Lines)", runExport},
		{"report", "gc|exceptions [--json|--csv] FILE  .NET GC and exception tables", runReport},
		{"bench", "FILE | --generate N  index and query benchmark", runBench},
		{"spans", "[--summary [--json]] FILE  derived slices (scheduling, syscalls, activities)", runSpans},
		{"diff", "[--json] [--fail-if EXPR] A B | A --ranges R1,R2  two traces or ranges compared", runDiff},
		{"attach", "PID [--duration D] [--output FILE] [--profile P]  trace a running .NET process", runAttach},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args, stdout, stderr)
		}
	}
	if name == "help" {
		usage(stdout)
		return nil
	}
	if file, _ := wrap.SplitMember(name); fileExists(file) { // `viewer FILE` serves FILE
		return runServe(ctx, append([]string{name}, args...), stdout, stderr)
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", name)
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  viewer %s %s\n", c.name, c.usage)
	}
}

// oneFile parses flags and returns the single FILE argument.
func oneFile(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", fmt.Errorf("%s takes one FILE", fs.Name())
	}
	return fs.Arg(0), nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
