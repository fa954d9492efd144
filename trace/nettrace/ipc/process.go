package ipc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a .NET process with a diagnostics socket.
type Process struct {
	PID         int
	Socket      string // path of its diagnostics socket
	CommandLine string // from /proc, "" when it does not tell
}

// maxCmdline bounds what is read of /proc/PID/cmdline.
const maxCmdline = 64 << 10

// Dir returns the directory the runtime puts its sockets in: $TMPDIR, else
// /tmp.
func Dir() string {
	if d := os.Getenv("TMPDIR"); d != "" {
		return d
	}
	return "/tmp"
}

// socketPID parses dotnet-diagnostic-{pid}-{key}-socket and returns pid.
func socketPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "dotnet-diagnostic-")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, "-socket")
	if !ok {
		return 0, false
	}
	pid, key, ok := strings.Cut(rest, "-")
	if !ok || !digits(pid) || !digits(key) {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Processes returns the .NET processes with a diagnostics socket in dir
// ("" means [Dir]), by PID. A process with several sockets (a PID reused
// after a crash that left one behind) is listed with the newest, as the
// runtime's own tools pick it; sockets of processes that no longer exist
// are left out.
func Processes(dir string) ([]Process, error) {
	if dir == "" {
		dir = Dir()
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type found struct {
		Process
		mod time.Time
	}
	byPID := map[int]found{}
	for _, de := range des {
		pid, ok := socketPID(de.Name())
		if !ok || de.Type()&os.ModeSocket == 0 {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if old, ok := byPID[pid]; ok && !info.ModTime().After(old.mod) {
			continue
		}
		byPID[pid] = found{Process{PID: pid, Socket: filepath.Join(dir, de.Name())}, info.ModTime()}
	}
	var out []Process
	for pid, f := range byPID {
		if !alive(pid) {
			continue
		}
		f.CommandLine = commandLine(pid)
		out = append(out, f.Process)
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out, nil
}

// Find returns the process pid from [Processes](dir).
func Find(dir string, pid int) (Process, error) {
	ps, err := Processes(dir)
	if err != nil {
		return Process{}, err
	}
	for _, p := range ps {
		if p.PID == pid {
			return p, nil
		}
	}
	if dir == "" {
		dir = Dir()
	}
	if !alive(pid) {
		return Process{}, fmt.Errorf("no process %d", pid)
	}
	return Process{}, fmt.Errorf("process %d has no diagnostics socket in %s: is it a .NET process, and does it see the same TMPDIR? (DOTNET_EnableDiagnostics=0 turns the socket off)", pid, dir)
}

// alive reports whether a process pid exists: signal 0 checks without
// sending anything, and EPERM means it exists but is another user's.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// commandLine returns /proc/PID/cmdline with its NULs as spaces, or "".
func commandLine(pid int) string {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCmdline))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
