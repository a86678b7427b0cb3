package fleet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/testkit/chaos"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux this runs on).
const clockTicks = 100

// pid is peer i's agent's process id (local-cluster.sh's pid file).
func pid(c *chaos.Cluster, i int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("peer-%d.pid", i)))
	if err != nil {
		return 0, fmt.Errorf("pid of peer %d: %w", i, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cpuTicks is the user and system time a process has used, in ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: the fields after it
	// start after its closing parenthesis; utime and stime are fields 14
	// and 15, the 12th and 13th after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %v %v", pid, err1, err2)
	}
	return u + s, nil
}

// idleCores is peer i's CPU over d, in cores.
func idleCores(ctx context.Context, c *chaos.Cluster, i int, d time.Duration) (float64, error) {
	p, err := pid(c, i)
	if err != nil {
		return 0, err
	}
	before, err := cpuTicks(p)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return 0, err
	}
	after, err := cpuTicks(p)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / clockTicks / time.Since(start).Seconds(), nil
}

// rssBytes is a process's resident memory (VmRSS).
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// rss is the median and the largest resident memory of peers 1..n.
func rss(c *chaos.Cluster, n int) (int64, int64, error) {
	var all []int64
	for i := 1; i <= n; i++ {
		p, err := pid(c, i)
		if err != nil {
			return 0, 0, err
		}
		b, err := rssBytes(p)
		if err != nil {
			return 0, 0, err
		}
		all = append(all, b)
	}
	slices.Sort(all)
	return all[len(all)/2], all[len(all)-1], nil
}
