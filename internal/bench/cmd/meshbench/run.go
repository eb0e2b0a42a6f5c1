package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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
)

// Run is one finished child process.
type Run struct {
	Wall time.Duration
	CPU  time.Duration // user + system, of the child and the descendants it waited for
	// MaxRSS is the child's peak resident set (VmHWM), sampled every 20 ms. The
	// getrusage ru_maxrss of a child is no use here: Linux counts the parent's
	// resident set at fork in it, and this program holds whole meshes.
	MaxRSS int64
	// TreeRSS is the largest sum of the resident sets of the process and all its
	// descendants at one instant, sampled every 100 ms (0 when not sampled).
	TreeRSS int64
	// ChildCPU is the CPU time of the descendants, summed by command name, each
	// at its last sample: a process started again under the same name (Terraform
	// starts a provider once per graph walk) adds to it. The CPU a process spends
	// after its last sample, at most one sampling period, is not counted.
	ChildCPU map[string]time.Duration
	Output   []byte
}

// runCmd runs cmd, teeing its output to log, and measures it. With tree, the
// whole process tree is sampled from /proc while it runs, else the child only.
func runCmd(cmd *exec.Cmd, log io.Writer, tree bool) (Run, error) {
	var out bytes.Buffer
	w := io.MultiWriter(&out, log)
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{}, err
	}
	r := Run{ChildCPU: map[string]time.Duration{}}
	// children holds each descendant's last sample, by pid.
	children := map[int]proc{}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		pid := cmd.Process.Pid
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			r.MaxRSS = max(r.MaxRSS, peakRSS(pid))
			if tree && i%5 == 0 {
				sum := int64(0)
				for _, p := range processTree(pid) {
					sum += p.rss
					if p.pid != pid {
						children[p.pid] = p
					}
				}
				r.TreeRSS = max(r.TreeRSS, sum)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-sampled
	for _, p := range children {
		r.ChildCPU[p.comm] += p.cpu
	}
	r.Wall = time.Since(start)
	r.Output = out.Bytes()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if err != nil {
		return r, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return r, nil
}

type proc struct {
	pid, ppid int
	comm      string
	rss       int64
	cpu       time.Duration
}

// processTree returns root and its descendants, read from /proc.
func processTree(root int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	all := map[int]proc{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if !ok {
			continue
		}
		all[pid] = p
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p, ok := all[pid]; ok {
			out = append(out, p)
		}
		queue = append(queue, children[pid]...)
	}
	return out
}

var pageSize = int64(os.Getpagesize())

// peakRSS reads VmHWM, the peak resident set of a process, in bytes.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ... utime(14) stime(15) ...; comm may hold spaces.
	s := string(stat)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return proc{}, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 13 {
		return proc{}, false
	}
	p := proc{pid: pid, comm: s[open+1 : closing]}
	p.ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	p.cpu = time.Duration(ut+st) * time.Second / clockTicks
	if statm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm")); err == nil {
		if g := strings.Fields(string(statm)); len(g) > 1 {
			pages, _ := strconv.ParseInt(g[1], 10, 64)
			p.rss = pages * pageSize
		}
	}
	return p, true
}

// BenchLine is one result line of `go test -bench`.
type BenchLine struct {
	Name   string // without the -GOMAXPROCS suffix
	N      int
	Values map[string]float64 // by unit: "ns/op", "B/op", custom metrics
}

// parseBench reads the result lines of `go test -bench` output.
func parseBench(out []byte) []BenchLine {
	var lines []BenchLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		l := BenchLine{Name: name, N: n, Values: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			l.Values[f[i+1]] = v
		}
		lines = append(lines, l)
	}
	return lines
}

// values collects one unit of every line with the given name.
func values(lines []BenchLine, name, unit string) Sample {
	var out Sample
	for _, l := range lines {
		if l.Name == name {
			if v, ok := l.Values[unit]; ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// execMeasurement is what `meshbench -measure-exec` prints about the command it ran.
type execMeasurement struct {
	WallNs int64 `json:"wall_ns"`
	CPUNs  int64 `json:"cpu_ns"`
	// MaxRSSBytes is the command's getrusage ru_maxrss.
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	OutputBytes int64 `json:"output_bytes"`
	ExitCode    int   `json:"exit_code"`
}

// measureExec runs argv, counts and discards its standard output, passes its
// standard error on, and prints an execMeasurement as JSON.
//
// Linux charges the resident set of the process that starts a child to the
// child's ru_maxrss (Go starts children with vfork, and exec keeps the high
// water mark of the memory it replaces), so meshbench, which holds whole
// meshes, cannot read a small command's peak from its own children. This
// small process starts the command instead.
func measureExec(argv []string, stdout, stderr io.Writer) error {
	if len(argv) == 0 {
		return fmt.Errorf("-measure-exec: no command")
	}
	var out countingWriter
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	start := time.Now()
	err := cmd.Run()
	m := execMeasurement{WallNs: int64(time.Since(start)), OutputBytes: out.n}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		m.ExitCode = exit.ExitCode()
	case err != nil:
		return err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.CPUNs = ru.Utime.Nano() + ru.Stime.Nano()
		m.MaxRSSBytes = ru.Maxrss * 1024 // KiB on Linux
	}
	return json.NewEncoder(stdout).Encode(m)
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// runMeasured runs argv through `meshbench -measure-exec` in dir, its standard
// error going to log.
func runMeasured(dir string, log io.Writer, argv ...string) (execMeasurement, error) {
	self, err := os.Executable()
	if err != nil {
		return execMeasurement{}, err
	}
	cmd := exec.Command(self, append([]string{"-measure-exec", "--"}, argv...)...)
	cmd.Dir, cmd.Stderr = dir, log
	fmt.Fprintf(log, "$ %s\n", strings.Join(argv, " "))
	out, err := cmd.Output()
	if err != nil {
		return execMeasurement{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	var m execMeasurement
	if err := json.Unmarshal(out, &m); err != nil {
		return m, fmt.Errorf("-measure-exec printed %q: %w", out, err)
	}
	return m, nil
}
