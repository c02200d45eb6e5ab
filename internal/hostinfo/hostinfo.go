// Package hostinfo names the machine a measurement ran on, for the
// generated BENCHMARKS.md and RELIABILITY.md: a figure means little
// without the CPU, cores, memory, kernel and Go behind it.
package hostinfo

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine describes this machine in one line: CPU model, CPUs, memory,
// kernel and Go, e.g. "AMD EPYC, 2 CPUs, 24 GiB; Linux 6.18; go1.26.8".
// What cannot be read says "?".
func Machine() string {
	model := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		if _, err := fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kib); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kib)/(1<<20))
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d CPUs%s; Linux %s; %s", model, runtime.NumCPU(), mem, kernel, runtime.Version())
}
