package handoff

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/procstat"
)

// ErrNotWrapped says the Pi that owns a live attempt does not run under
// `herdr-pi wrap`, so nothing can ask it to hand the attempt off.
var ErrNotWrapped = errors.New("the owner Pi does not run under herdr-pi wrap")

// OwnerWrapper finds the herdr-pi wrapper whose agent is the Pi with pid
// (a run's owner, by its lease): a wrapper process among pid's ancestors
// (wrap runs its agent under a small leader process, so the wrapper is a
// grandparent), as the pane registry lists it; else the endpoint in that
// Pi's own environment, when the socket it names lies in the run directory
// of one of those ancestors (a wrapper outside Herdr registers no pane)
// and that run directory is alive by the sweep's own test (a directory the
// next wrapper would remove is never handed out as a wrapper to talk to).
// A Pi under none is ErrNotWrapped.
func OwnerWrapper(runtimeBase string, pid int) (control.Endpoint, error) {
	ancestors := map[int]bool{}
	for p, n := pid, 0; n < 64; n++ {
		parent, err := ParentOf(p)
		if err != nil || parent <= 1 {
			break
		}
		ancestors[parent] = true
		p = parent
	}
	if !control.ProcessAlive(pid) {
		return control.Endpoint{}, fmt.Errorf("the owner Pi (pid %d) is gone", pid)
	}
	entries, _ := control.PaneRegistry(runtimeBase).Entries()
	for _, e := range entries {
		if e.Err == nil && e.Alive && ancestors[e.Endpoint.PID] {
			return e.Endpoint, nil
		}
	}
	if ep, ok := endpointFromEnviron(pid); ok {
		if rd, ok := control.ReadRunDir(filepath.Dir(ep.Socket)); ok && rd.Alive && ancestors[rd.PID] {
			ep.PID = rd.PID
			return ep, nil
		}
	}
	return control.Endpoint{}, fmt.Errorf("%w (pid %d has no herdr-pi wrapper above it)", ErrNotWrapped, pid)
}

// ParentOf reads a process's parent from /proc/<pid>/stat.
func ParentOf(pid int) (int, error) {
	st, err := procstat.Read(pid)
	if err != nil {
		return 0, err
	}
	if st.Fields < 2 {
		return 0, procstat.ErrMalformed
	}
	return st.PPID, nil
}

// endpointFromEnviron reads the control endpoint a wrapper put into its
// child's environment.
func endpointFromEnviron(pid int) (control.Endpoint, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return control.Endpoint{}, false
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return control.EndpointFromEnv(func(k string) string { return env[k] })
}
