package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"viewer/trace/follow"
	"viewer/web"
)

// followFile shows a file another program is still writing as a live
// trace: its bytes are recorded into the library as they are appended,
// until the trace's own end (a NetTrace end-of-stream block), the page's
// Stop, or shutdown.
func followFile(ctx context.Context, srv *web.Server, name string) (web.Entry, error) {
	in, err := os.Open(name)
	if err != nil {
		return web.Entry{}, err
	}
	f := follow.New(in, 0, 1<<62)
	pctx, stop := context.WithCancel(ctx)
	go func() {
		defer in.Close()
		follow.Poll(pctx, name, f, 50*time.Millisecond)
	}()
	e, _, err := srv.Ingest(web.LiveSource{Name: filepath.Base(name), R: f.Reader(), Stop: stop})
	if err != nil {
		stop()
		return web.Entry{}, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

// recordEvents are the tracepoints `viewer record` records by default:
// what the scheduling and syscall tracks are derived from.
var recordEvents = []string{
	"sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new",
	"sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit",
	"raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
}

// runRecord runs `perf record` in pipe mode around a command (or the
// whole system) and shows the recording live; it is stored in the
// library when the command exits or the recording is stopped.
func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("record", stderr)
	sf := addServeFlags(fs)
	var events []string
	fs.Func("event", "also record tracepoint `EV` (system:name, e.g. user_events:MyProvider_L4K1); repeatable", func(v string) error {
		events = append(events, v)
		return nil
	})
	noDefault := fs.Bool("no-default-events", false, "record only the --event tracepoints, not the scheduler and syscall ones")
	output := fs.String("output", "", "also write the recording (perf.data, pipe mode) to `FILE`")
	mmap := fs.Int("mmap-pages", 16, "perf's buffer `pages` per CPU: fewer pages hand events over sooner (live), more lose fewer under load")
	exit := fs.Bool("exit", false, "exit once the recording is stored instead of serving on")
	perfPath := fs.String("perf", "perf", "the perf `program`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sf.listen != "" && !loopbackOnly(*sf.listen) && !*sf.allowAttach {
		return errors.New("record: serving a recording beyond loopback needs --allow-attach (whoever reaches the page watches this machine's processes and can stop the recording)")
	}
	cmd := fs.Args()
	if !*noDefault {
		events = append(append([]string{}, recordEvents...), events...)
	}
	if len(events) == 0 {
		return errors.New("record: no events to record")
	}
	pargs := []string{"record", "-q", "-o", "-", "-k", "monotonic", "-m", strconv.Itoa(*mmap)}
	for _, ev := range events {
		pargs = append(pargs, "-e", ev)
	}
	if len(cmd) == 0 {
		pargs = append(pargs, "-a")
	} else {
		pargs = append(append(pargs, "--"), cmd...)
	}
	perf := exec.Command(*perfPath, pargs...)
	perf.Stdin = os.Stdin
	var perfErr strings.Builder
	perf.Stderr = io.MultiWriter(stderr, &perfErr)
	out, err := perf.StdoutPipe()
	if err != nil {
		return err
	}
	var src io.Reader = out
	var file *os.File
	if *output != "" {
		if file, err = os.Create(*output); err != nil {
			return err
		}
		defer file.Close()
		src = io.TeeReader(out, file)
	}
	if err := perf.Start(); err != nil {
		return fmt.Errorf("record: starting perf: %w (install linux-perf, or name it with --perf)", err)
	}
	stop := func() { perf.Process.Signal(syscall.SIGINT) }
	name := "perf-record.data"
	if len(cmd) > 0 {
		name = "perf-record-" + filepath.Base(cmd[0]) + ".data"
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return sf.serve(sctx, stdout, stderr, func(ctx context.Context, srv *web.Server) ([]web.Entry, error) {
		e, stored, err := srv.Ingest(web.LiveSource{Name: name, R: src, Stop: stop})
		if err != nil {
			stop()
			return nil, err
		}
		go func() {
			<-stored
			err := perf.Wait()
			if file != nil {
				file.Sync()
			}
			if err != nil && !isInterrupt(err) {
				fmt.Fprintf(stderr, "viewer: perf record: %v\n", err)
				if hint := perfHint(perfErr.String()); hint != "" {
					fmt.Fprintln(stderr, "viewer: "+hint)
				}
			}
			if got, ok := srv.Library().Get(e.ID); ok && !got.Live {
				fmt.Fprintf(stdout, "viewer: recording stored: %d bytes\n", got.Size)
			}
			if *exit {
				cancel()
			}
		}()
		return []web.Entry{e}, nil
	})
}

// isInterrupt reports whether perf ended because it was told to stop.
func isInterrupt(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
		return true
	}
	return ee.ExitCode() == 130 || ee.ExitCode() == 0
}

// perfHint says what to change when perf cannot record.
func perfHint(msg string) string {
	switch {
	case strings.Contains(msg, "perf_event_paranoid"), strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Access to performance monitoring"):
		return "perf may not record here: run as root, or lower /proc/sys/kernel/perf_event_paranoid (e.g. sysctl kernel.perf_event_paranoid=-1) and make tracefs readable"
	case strings.Contains(msg, "tracepoint") || strings.Contains(msg, "event syntax error"):
		return "perf does not know one of the events: list them with `perf list tracepoint` (tracefs must be mounted and readable)"
	}
	return ""
}
