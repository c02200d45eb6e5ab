package herdrtest

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/procstat"
)

// procStat is what the fake reads of a process from /proc/<pid>/stat.
// Where /proc is absent (not Linux) every read finds nothing, and
// pane.process_info of a real pane has no processes.
type procStat struct {
	pid, ppid, pgrp, tpgid int
	comm                   string
	state                  byte
	start                  uint64 // ticks since boot: tells a pid from its reuse
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(pid, b)
}

// parseStat reads a stat line through procstat, the product's one parser,
// and adds the name (which the product never needs): the text between the
// first '(' and the last ')'.
func parseStat(pid int, line []byte) (procStat, bool) {
	open, close := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 0 || close < open {
		return procStat{}, false
	}
	st, ok := procstat.Parse(line)
	if !ok || st.Fields < 20 {
		return procStat{}, false
	}
	return procStat{pid: pid, comm: string(line[open+1 : close]), state: st.State,
		ppid: st.PPID, pgrp: st.PGRP, tpgid: st.TPGID, start: st.Start}, true
}

// cmdline is a process's argv, nil when unreadable or empty.
func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func startTime(pid int) uint64 {
	st, _ := readStat(pid)
	return st.start
}

// running says whether p still runs: the same pid and start, not a zombie
// (a container's init may never reap it).
func running(p procStat) bool {
	st, ok := readStat(p.pid)
	return ok && st.start == p.start && st.state != 'Z' && st.state != 'X'
}

func allProcs() []procStat {
	ents, _ := os.ReadDir("/proc")
	var out []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// descendants are the roots and every process below them.
func descendants(roots []int) []procStat {
	all := allProcs()
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid], grew = true, true
			}
		}
	}
	var out []procStat
	for _, p := range all {
		if in[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

// realProcessInfo answers pane.process_info from the pane's shell: the
// foreground process group of its terminal and that group's processes, as
// Herdr reads them (herdr-socket-api.md §4.4; tty is always null there).
// The supervisor (rootPID) is the fake's, not Herdr's: while the shell
// has not yet taken the terminal, its group counts as the shell's.
func realProcessInfo(paneID string, rootPID, shellPID int) map[string]any {
	info := map[string]any{"pane_id": paneID, "shell_pid": shellPID, "foreground_process_group_id": nil,
		"tty": nil, "foreground_processes": []any{}}
	// One snapshot for all, so a shell that moves to its own group while
	// it is read still counts once, consistently.
	all := allProcs()
	i := slices.IndexFunc(all, func(p procStat) bool { return p.pid == shellPID })
	if i < 0 || all[i].tpgid <= 0 {
		return info
	}
	shell := all[i]
	fg := shell.tpgid
	if fg == rootPID {
		fg = shell.pgrp
	}
	info["foreground_process_group_id"] = fg
	if fg == rootPID {
		info["foreground_process_group_id"] = shellPID
	}
	var group []procStat
	for _, p := range all {
		if p.pgrp == fg && p.state != 'Z' && p.pid != rootPID {
			group = append(group, p)
		}
	}
	slices.SortFunc(group, func(a, b procStat) int { return a.pid - b.pid })
	procs := []any{}
	for _, p := range group {
		m := map[string]any{"pid": p.pid, "name": p.comm, "argv0": nil, "argv": nil, "cmdline": nil, "cwd": nil}
		if argv := cmdline(p.pid); len(argv) > 0 {
			m["argv0"], m["argv"], m["cmdline"] = argv[0], argv, strings.Join(argv, " ")
		}
		if cwd, err := os.Readlink("/proc/" + strconv.Itoa(p.pid) + "/cwd"); err == nil {
			m["cwd"] = cwd
		}
		procs = append(procs, m)
	}
	info["foreground_processes"] = procs
	return info
}
