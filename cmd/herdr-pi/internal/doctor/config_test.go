package doctor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/settings"
)

const goodManifest = `id = "mine"
version = "1"
min_engine_version = 3
[[rules]]
id = "busy"
state = "working"
region = "bottom_non_empty_lines(3)"
contains = ["Busy"]
`

func TestDoctorConfigRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  map[string]string // row name → "status|detail piece|fix piece"
		none  []string          // rows that must not appear
	}{
		{"nothing configured", nil, map[string]string{
			"config.toml": "ok|~/.config/herdr-pi/config.toml does not exist: the built-in defaults apply",
			"manifests":   "ok|no user detection manifests in ~/.config/herdr-pi/manifests: the built-in ones apply",
		}, []string{"pi-terminal-notifications"}},
		{"valid files", map[string]string{
			".config/herdr-pi/config.toml":                               "[notify]\nchannel = \"terminal\"\n",
			".config/herdr-pi/manifests/mine.toml":                       goodManifest,
			".pi/agent/extensions/pi-terminal-notifications/config.json": `{"fallback": "osc777"}`,
		}, map[string]string{
			"config.toml":               "ok|~/.config/herdr-pi/config.toml is valid",
			"manifests":                 "ok|1 user manifest in ~/.config/herdr-pi/manifests: mine.toml (each replaces the built-in manifest of the same name)",
			"pi-terminal-notifications": "ok|~/.pi/agent/extensions/pi-terminal-notifications/config.json is valid",
		}, nil},
		{"an unknown key and a bad value", map[string]string{
			".config/herdr-pi/config.toml": "[notify]\n# the colour of toasts\ncolour = \"red\"\n\nchannel = \"pigeon\"\n",
		}, map[string]string{
			"config.toml": `warn|~/.config/herdr-pi/config.toml:3: unknown key "colour" in [notify]; ` +
				`~/.config/herdr-pi/config.toml:5: channel = "pigeon": must be one of auto, herdr, terminal, off: herdr-pi runs with the built-in defaults until this is fixed` +
				`|fix the mistake(s) named in ~/.config/herdr-pi/config.toml (docs/configuration.md lists every key)`,
		}, nil},
		{"a value of the wrong type next to a bad one", map[string]string{
			".config/herdr-pi/config.toml": "[detect]\ndebounce = \"20s\"\nstartup_grace = 5\n",
		}, map[string]string{
			"config.toml": `warn|~/.config/herdr-pi/config.toml:2: debounce = "20s": must be between 0s and 10s; ` +
				`~/.config/herdr-pi/config.toml:3: key "detect.startup_grace": 5 is a number without a unit: a duration is a string with one, e.g. "5s" or "300ms": herdr-pi runs with the built-in defaults` +
				`|fix the mistake(s) named in ~/.config/herdr-pi/config.toml`,
		}, nil},
		{"a TOML syntax error", map[string]string{
			".config/herdr-pi/config.toml": "[herdr]\nagent = \"pi\"\nsource = custom\n",
		}, map[string]string{
			"config.toml": `warn|~/.config/herdr-pi/config.toml:3: key "herdr.source": expected value but found "custom" instead: herdr-pi runs with the built-in defaults|fix the mistake(s) named in ~/.config/herdr-pi/config.toml`,
		}, nil},
		// A mistake in the file whose line cannot be pinned down is still
		// fixed by editing the file: the fix must not talk about making it
		// a regular UTF-8 file, as it does for one that could not be read.
		{"a mistake without a line", map[string]string{
			// The key is written with an escape, so no line reads "a".
			".config/herdr-pi/config.toml": "\"\\u0061\".b = 1\n",
		}, map[string]string{
			"config.toml": `warn|~/.config/herdr-pi/config.toml: unknown table [a]: herdr-pi runs with the built-in defaults|fix the mistake(s) named in ~/.config/herdr-pi/config.toml`,
		}, nil},
		// No manifest is built in under claude: the file is ignored and
		// wrap reads the agent as pi, not with a built-in of its name.
		{"a broken manifest with no built-in of its name", map[string]string{
			".config/herdr-pi/manifests/claude.toml": "id = \"claude\"\n[[rules]]\nid = \"x\"\nstate = \"sleepy\"\n",
		}, map[string]string{
			"manifests": `warn|must be idle, working, blocked or unknown: this file is ignored, and no manifest is built in as claude: wrap reads that agent as pi|herdr-pi detect --manifest FILE`,
		}, nil},
		{"a broken manifest next to a good one", map[string]string{
			".config/herdr-pi/manifests/mine.toml": goodManifest,
			".config/herdr-pi/manifests/pi.toml":   "id = \"pi\"\n[[rules]]\nid = \"x\"\nstate = \"sleepy\"\n",
		}, map[string]string{
			"manifests": `warn|~/.config/herdr-pi/manifests/pi.toml:2: rule "x": the rule needs a positive matcher (contains, regex, line_regex, all or any); ` +
				`~/.config/herdr-pi/manifests/pi.toml:4: rule "x": state = "sleepy": must be idle, working, blocked or unknown: each of these files is ignored|herdr-pi detect --manifest FILE`,
		}, nil},
		{"the seed's config.json is broken", map[string]string{
			".pi/agent/extensions/pi-terminal-notifications/config.json": "{\n oops",
		}, map[string]string{
			"pi-terminal-notifications": "warn|~/.pi/agent/extensions/pi-terminal-notifications/config.json:2: invalid JSON|set [notify] term_programs in herdr-pi's config.toml instead",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			for path, content := range tc.files {
				w.File(path, content, 0o600)
			}
			rows := map[string]Row{}
			for _, r := range configChecks(t.Context(), input(w, time.Second)) {
				rows[r.Name] = r
			}
			for name, want := range tc.want {
				r, ok := rows[name]
				if !ok {
					t.Fatalf("no %s row in %+v", name, rows)
				}
				checkRowWant(t, r, want)
			}
			for _, name := range tc.none {
				if _, ok := rows[name]; ok {
					t.Errorf("unexpected row %+v", rows[name])
				}
			}
		})
	}
}

// A config file herdr-pi may not read has no line to fix: the way out is
// its permissions.
func TestDoctorConfigUnreadable(t *testing.T) {
	w := doctortest.New(t)
	path := w.File(".config/herdr-pi/config.toml", "[notify]\nchannel = \"terminal\"\n", 0o000)
	openDirsAbove(t, path)
	var d Input
	testenv.AsUnprivileged(t, path, func() { d = input(w, time.Second) })
	fix := "make " + path + " readable by the user running herdr-pi (chmod u+r " + path + ", or chown it)"
	checkRowWant(t, configFileRow(d), "warn|~/.config/herdr-pi/config.toml: cannot open: permission denied; "+fix+": herdr-pi runs with the built-in defaults|"+fix)
}

// openDirsAbove lets every user into the directories above path, up to
// the temporary directory's parent: then the file's own mode, not a shut
// directory above it (which the message would name instead), keeps it
// unread.
func openDirsAbove(t *testing.T, path string) {
	t.Helper()
	for dir := filepath.Dir(path); dir != "/tmp" && dir != "/"; dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// A config file that could not be read at all has no line to fix: the fix
// doctor gives is the way out of what is wrong with the file as a whole,
// and names the culprit when it is not the file itself.
func TestDoctorConfigFixFitsAFileThatCannotBeRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *doctortest.World)
		want  string // "warn|detail piece|fix piece"; HOME stands for the home
	}{
		{"its directory is a file", func(w *doctortest.World) { w.File(".config/herdr-pi", "x", 0o600) },
			"warn|~/.config/herdr-pi/config.toml: cannot read: HOME/.config/herdr-pi is a file, not a directory|" +
				"move ~/.config/herdr-pi away or rename it: it is a file where ~/.config/herdr-pi/config.toml needs a directory"},
		{"it is a directory", func(w *doctortest.World) {
			if err := os.MkdirAll(filepath.Join(w.Home, ".config/herdr-pi/config.toml"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "warn|~/.config/herdr-pi/config.toml: is a directory, not a file|make ~/.config/herdr-pi/config.toml a regular UTF-8 TOML file"},
		{"it is UTF-16", func(w *doctortest.World) { w.File(".config/herdr-pi/config.toml", "\xff\xfe", 0o600) },
			"warn|is UTF-16|make ~/.config/herdr-pi/config.toml a regular UTF-8 TOML file"},
		{"it is a symlink loop", func(w *doctortest.World) {
			if err := os.MkdirAll(filepath.Join(w.Home, ".config/herdr-pi"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("config.toml", filepath.Join(w.Home, ".config/herdr-pi/config.toml")); err != nil {
				t.Fatal(err)
			}
		}, "warn|~/.config/herdr-pi/config.toml: cannot read: too many levels of symbolic links|" +
			"~/.config/herdr-pi/config.toml leads through a symlink loop: see where each link there leads with `ls -l`, then point the loop's link at a real directory or file, or remove it"},
		{"HERDR_PI_CONFIG names a file that is not there", func(w *doctortest.World) { w.Set("HERDR_PI_CONFIG=" + filepath.Join(w.Home, "confg.toml")) },
			"warn|~/confg.toml: does not exist, and HERDR_PI_CONFIG names it|create ~/confg.toml, or point HERDR_PI_CONFIG at your config file"},
		// Refused for who may write it (docs/configuration.md): the way
		// out is its mode, not to make it a regular file or remove it.
		{"anyone may write it", func(w *doctortest.World) {
			chmod(t, w.File(".config/herdr-pi/config.toml", "[notify]\n", 0o600), 0o666)
		}, "warn|~/.config/herdr-pi/config.toml: may be written by anyone (mode 0666)|run chmod o-w HOME/.config/herdr-pi/config.toml"},
		{"anyone may write its directory", func(w *doctortest.World) {
			chmod(t, filepath.Dir(w.File(".config/herdr-pi/config.toml", "[notify]\n", 0o600)), 0o777)
		}, "warn|~/.config/herdr-pi/config.toml: is in directory HOME/.config/herdr-pi, which may be written by anyone and is not sticky|" +
			"run chmod o-w HOME/.config/herdr-pi (or chmod +t HOME/.config/herdr-pi), or move it to a directory of yours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			tc.setup(w)
			r := configFileRow(input(w, time.Second))
			checkRowWant(t, r, strings.ReplaceAll(tc.want, "HOME", w.Home))
			if strings.Contains(r.Fix, "line") {
				t.Errorf("fix %q sends the person to lines the file does not have", r.Fix)
			}
			if strings.Contains(tc.name, "anyone") && strings.Contains(r.Fix, "regular") {
				t.Errorf("fix %q is for a file that is not a regular one; this one is, and only its mode is wrong", r.Fix)
			}
		})
	}
}

// The log's directory, checked by the rule herdr-pi applies before it
// writes a line there.
func TestDoctorLogRow(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode os.FileMode // 0: missing
		env  []string
		want string
		// fileAbove puts a file where the state directory's parent
		// (XDG_STATE_HOME, ~/.local/state) should be.
		fileAbove bool
	}{
		{"missing", 0, nil, "ok|STATE does not exist yet: the first herdr-pi creates it, mode 0700", false},
		{"private", 0o700, nil, "ok|herdr-pi logs to STATE/herdr-pi.log (its directory is ours and 0700)", false},
		{"open to others", 0o755, nil, "warn|the log private directory STATE has mode 0755, want 0700: refusing to use it; until then herdr-pi writes no log|chmod 700 STATE", false},
		{"turned off", 0o755, []string{"HERDR_PI_LOG=off"}, "ok|HERDR_PI_LOG=off: herdr-pi writes no log", false},
		// The log reads HERDR_PI_LOG without regard to case (log.go):
		// doctor must agree, or it warns about a log that is off, and
		// about levels that work.
		{"turned off in capitals", 0o755, []string{"HERDR_PI_LOG=OFF"}, "ok|HERDR_PI_LOG=off: herdr-pi writes no log", false},
		{"info, the default level", 0o700, []string{"HERDR_PI_LOG=info"}, "ok|herdr-pi logs to STATE/herdr-pi.log", false},
		{"debug in capitals", 0o700, []string{"HERDR_PI_LOG=Debug"}, "ok|herdr-pi logs to STATE/herdr-pi.log", false},
		// A value herdr-pi does not know (HERDR_PI_LOG=0, none, false: meant
		// as off) changes nothing, and nothing else would say so.
		{"an unknown value", 0o700, []string{"HERDR_PI_LOG=0"}, `warn|HERDR_PI_LOG="0" is not off, debug or info: herdr-pi logs as if it were unset, to STATE/herdr-pi.log|HERDR_PI_LOG=off turns the log off, HERDR_PI_LOG=debug makes it verbose`, false},
		// lstat's "not a directory" named neither the file in the way nor
		// the fix; "check that you can read it" was no way out.
		{"a file where its parent should be", 0, nil, "warn|the log directory STATE cannot be made: ABOVE is a file, not a directory; until then herdr-pi writes no log|move ABOVE away or rename it: it is a file where STATE needs a directory", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t).Set(tc.env...)
			dir := w.Paths().StateDir
			if tc.mode != 0 {
				if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
					t.Fatal(err)
				}
				mkdir(t, dir, tc.mode)
			}
			above := filepath.Dir(dir)
			if tc.fileAbove {
				if err := os.WriteFile(above, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			checkRowWant(t, logRow(input(w, time.Second)), strings.NewReplacer("STATE", dir, "ABOVE", above).Replace(tc.want))
		})
	}
}

func TestDoctorRuntimeRows(t *testing.T) {
	dead := deadPID(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, base string)
		want  map[string]string
	}{
		{"no runtime directory yet", func(*testing.T, string) {}, map[string]string{
			"directory": "ok|BASE does not exist yet: the first wrapper creates it, mode 0700",
			"registry":  "ok|no wrapper is registered for a Herdr pane",
		}},
		{"open to others", func(t *testing.T, base string) { mkdir(t, base, 0o755) }, map[string]string{
			"directory": "fail|private directory BASE has mode 0755, want 0700|chmod 700 BASE",
		}},
		// Ours and closed to others, but not to be written by us
		// either: "cannot take a new file although it is ours and
		// 0700" blamed an attribute or a security module.
		{"not writable by us", func(t *testing.T, base string) { mkdir(t, base, 0o500) }, map[string]string{
			"directory": "fail|private directory BASE has mode 0500, want 0700|chmod 700 BASE",
		}},
		{"a symlink in its place", func(t *testing.T, base string) {
			mkdir(t, base+"-real", 0o700)
			if err := os.Symlink(base+"-real", base); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{
			"directory": "fail|private directory BASE is not a directory|remove BASE (a symlink or file is in its place)",
		}},
		// Anyone may rename an open, non-sticky XDG_RUNTIME_DIR's
		// entries: the wrapper refuses it, and doctor says so before,
		// whether the runtime directory exists yet or not.
		{"under a directory others may write", func(t *testing.T, base string) {
			if err := os.Chmod(filepath.Dir(base), 0o777); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{
			"directory": "fail|private directory BASE is under PARENT, which others may write and which is not sticky (anyone could put a directory of theirs in place of ours): refusing to use it|chmod +t PARENT (or chmod o-w PARENT), or point XDG_RUNTIME_DIR at a directory of your own",
		}},
		{"a registry open to others", func(t *testing.T, base string) {
			mkdir(t, base, 0o700)
			mkdir(t, filepath.Join(base, "panes"), 0o755)
		}, map[string]string{
			"directory": "ok|BASE is ours and 0700",
			"registry":  "fail|the pane registry private directory BASE/panes has mode 0755|chmod 700 BASE/panes",
		}},
		{"a running wrapper, a killed one", func(t *testing.T, base string) {
			mkdir(t, base, 0o700)
			mkdir(t, filepath.Join(base, "run-"+strconv.Itoa(os.Getpid())+"-1"), 0o700)
			mkdir(t, filepath.Join(base, "run-"+strconv.Itoa(dead)+"-2"), 0o700)
			reg := control.PaneRegistry(base)
			started := time.Date(2026, 11, 29, 14, 2, 11, 0, time.Local)
			if _, err := reg.Register(control.PaneKey("/h", "w1:p1"), control.Endpoint{Socket: "/x", Token: "t", PID: os.Getpid(), PaneID: "w1:p1"}); err != nil {
				t.Fatal(err)
			}
			// Written by hand: registering would sweep it.
			data := `{"socket":"/y","token":"u","pid":` + strconv.Itoa(dead) + `,"pane_id":"w2:p3","started":"` + started.Format(time.RFC3339) + `"}`
			if err := os.WriteFile(filepath.Join(reg.Dir, control.PaneKey("/h", "w2:p3")), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{
			"directory": "ok|BASE is ours and 0700 (run directories: 1 of running wrappers, 1 left by wrappers that were killed, which the next wrapper removes)",
			"registry": "warn|1 running wrapper registered: pane w1:p1 (pid " + strconv.Itoa(os.Getpid()) + "); 1 stale entry of wrappers that are gone without cleaning up: pane w2:p3 (pid " + strconv.Itoa(dead) + ", started 2026-11-29 14:02:11); Herdr may still show their last state in those panes" +
				"|the next 'herdr-pi wrap' removes stale entries (and a pane whose state looks stuck clears when herdr-pi runs there again); to remove them now: rm BASE/panes/" + control.PaneKey("/h", "w2:p3"),
		}},
		// An entry that is not JSON names no pane to sweep it by: only
		// doctor can point at it, so it is a warning even alone.
		{"an entry that cannot be read", func(t *testing.T, base string) {
			mkdir(t, base, 0o700)
			reg := control.PaneRegistry(base)
			mkdir(t, reg.Dir, 0o700)
			if err := os.WriteFile(filepath.Join(reg.Dir, control.PaneKey("/h", "w9:p9")), []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{
			"registry": "warn|no wrapper is registered for a Herdr pane; 1 entry that cannot be read: BASE/panes/" + control.PaneKey("/h", "w9:p9") +
				"|to remove them now: rm BASE/panes/" + control.PaneKey("/h", "w9:p9"),
		}},
		// Liveness is the run directory's lock, as the sweep judges it:
		// a wrapper in another pid namespace (its pid absent here) holds
		// its lock and runs; a killed one whose pid now names a live
		// process (here the test's own) left its lock free.
		{"a running wrapper in another pid namespace, a killed one whose pid is reused", func(t *testing.T, base string) {
			mkdir(t, base, 0o700)
			held, err := control.NewRunDir(base)
			if err != nil {
				t.Fatal(err)
			}
			foreign := filepath.Join(base, "run-"+strconv.Itoa(1<<30)+"-1")
			if err := os.Rename(held.Path, foreign); err != nil {
				t.Fatal(err)
			}
			held.Path = foreign
			t.Cleanup(func() { held.Remove() })
			reused := filepath.Join(base, "run-"+strconv.Itoa(os.Getpid())+"-2")
			mkdir(t, reused, 0o700)
			if err := os.WriteFile(filepath.Join(reused, "wrapper.lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{
			"directory": "ok|BASE is ours and 0700 (run directories: 1 of running wrappers, 1 left by wrappers that were killed, which the next wrapper removes)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			base := w.Paths().RuntimeBase
			tc.setup(t, base)
			rows := map[string]Row{}
			for _, r := range runtimeChecks(t.Context(), input(w, time.Second)) {
				rows[r.Name] = r
			}
			for name, want := range tc.want {
				checkRowWant(t, rows[name], strings.NewReplacer("BASE", base, "PARENT", filepath.Dir(base)).Replace(want))
			}
		})
	}
	if os.Getuid() == 0 {
		t.Run("someone else's", func(t *testing.T) {
			w := doctortest.New(t)
			base := w.Paths().RuntimeBase
			mkdir(t, base, 0o700)
			if err := os.Chown(base, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			r := runtimeChecks(t.Context(), input(w, time.Second))[0]
			checkRowWant(t, r, "fail|private directory "+base+" belongs to uid 65534, not to us (uid 0)|remove "+base+" (it belongs to uid 65534: ask its owner or root), or point XDG_RUNTIME_DIR at a directory of your own")
		})
		// Planted in a sticky /tmp by another user, it is theirs to
		// remove, not ours: "remove BASE" was an rm that fails.
		t.Run("someone else's symlink in its place", func(t *testing.T) {
			w := doctortest.New(t)
			base := w.Paths().RuntimeBase
			mkdir(t, base+"-real", 0o700)
			if err := os.Symlink(base+"-real", base); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(base, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			r := runtimeChecks(t.Context(), input(w, time.Second))[0]
			checkRowWant(t, r, "fail|private directory "+base+" is not a directory: a symlink or file of uid 65534, not ours (uid 0), is in its place: refusing to use it|remove "+base+" (a symlink or file of uid 65534 is in its place: ask its owner or root), or point XDG_RUNTIME_DIR at a directory of your own")
		})
	}
}

// A file where XDG_RUNTIME_DIR's directory should be is named, with the
// fix, in the rows of the directories it keeps from being made.
func TestDoctorRuntimeRowsNameAFileInTheWay(t *testing.T) {
	w := doctortest.New(t)
	file := filepath.Join(w.Home, "runtime")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Set("XDG_RUNTIME_DIR=" + file)
	base := w.Paths().RuntimeBase
	rows := map[string]Row{}
	for _, r := range runtimeChecks(t.Context(), input(w, time.Second)) {
		rows[r.Name] = r
	}
	checkRowWant(t, rows["directory"], "fail|directory "+base+" cannot be made: "+file+" is a file, not a directory|move "+file+" away or rename it: it is a file where "+base+" needs a directory")
	checkRowWant(t, rows["registry"], "fail|"+file+" is a file, not a directory|move "+file+" away or rename it")
	// The variable names that file itself: it may well be the person's
	// own (a script, a note), and the variable is the likelier mistake.
	for _, name := range []string{"directory", "registry"} {
		checkRowWant(t, rows[name], "fail||or point XDG_RUNTIME_DIR at a directory of yours, or unset it (herdr-pi then uses /tmp): XDG_RUNTIME_DIR="+file+" names that file")
	}
	// So for the log's directory and XDG_STATE_HOME.
	w.Set("XDG_STATE_HOME=" + file)
	checkRowWant(t, logRow(input(w, time.Second)), "warn||or point XDG_STATE_HOME at a directory of yours, or unset it (herdr-pi then uses ~/.local/state): XDG_STATE_HOME="+file+" names that file")
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// A settings file behind a symlink that leads nowhere is a mistake doctor
// names with the link's target, not "does not exist": the person made the
// link to have the file read.
func TestDoctorNamesBrokenSymlinks(t *testing.T) {
	w := doctortest.New(t)
	paths := w.Paths()
	link := func(target, at string) {
		if err := os.MkdirAll(filepath.Dir(at), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
	}
	link("/nonexistent/config.toml", paths.ConfigFile)
	link("/nonexistent/manifests", paths.ManifestDir)
	link("/nonexistent/config.json", paths.TerminalNotificationsFile())
	link("/nonexistent/settings.json", settings.WorkflowSettingsFile(paths.PiAgentDir))
	in := input(w, time.Second)
	checkRowWant(t, configFileRow(in), "warn|~/.config/herdr-pi/config.toml: is a symlink to /nonexistent/config.toml, which does not exist"+
		"|point the symlink ~/.config/herdr-pi/config.toml at an existing file (it leads to /nonexistent/config.toml, which does not exist), or remove it")
	checkRowWant(t, manifestsRow(in), "warn|~/.config/herdr-pi/manifests: is a symlink to /nonexistent/manifests, which does not exist, so no manifest there is read; "+
		"point it at an existing directory, or remove it; the built-in manifests apply|point the symlink ~/.config/herdr-pi/manifests at your manifests directory (it leads to /nonexistent/manifests, which does not exist), or remove it")
	seed, ok := seedConfigRow(in)
	if !ok {
		t.Fatal("no pi-terminal-notifications row for a broken symlink")
	}
	checkRowWant(t, seed, "warn|config.json: is a symlink to /nonexistent/config.json, which does not exist|point the symlink ~/.pi/agent/extensions/pi-terminal-notifications/config.json at an existing file")
	checkRowWant(t, workflowSettingsRow(in), "warn|fully inspectable mode is off: ~/.pi/agent/pi-extensible-workflows/settings.json is a symlink to /nonexistent/settings.json, which does not exist"+
		"|point the symlink ~/.pi/agent/pi-extensible-workflows/settings.json at an existing file")
}

// A path an environment variable chose is the variable's to fix: doctor
// never tells anyone to make /dev/zero a TOML file or to move /dev/null
// away. /dev/null itself is "no config".
func TestDoctorFixNamesTheVariableThatChoseThePath(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		rows      map[string]string
	}{
		{"HERDR_PI_CONFIG=/dev/null", "HERDR_PI_CONFIG=/dev/null", map[string]string{
			"config.toml": "ok|HERDR_PI_CONFIG=/dev/null: no config, the built-in defaults apply",
		}},
		{"HERDR_PI_CONFIG=/dev/zero", "HERDR_PI_CONFIG=/dev/zero", map[string]string{
			"config.toml": "warn|/dev/zero: is a device, not a regular file" +
				"|HERDR_PI_CONFIG names /dev/zero, which is not a regular file: point HERDR_PI_CONFIG at your config file, or unset it (herdr-pi then reads ~/.config/herdr-pi/config.toml)",
		}},
		{"HERDR_PI_CONFIG under a file", "HERDR_PI_CONFIG=/etc/passwd/config.toml", map[string]string{
			"config.toml": "warn|/etc/passwd/config.toml: cannot read: /etc/passwd is a file, not a directory" +
				"|HERDR_PI_CONFIG leads through /etc/passwd, which is not a directory: point HERDR_PI_CONFIG at your config file, or unset it",
		}},
		{"PI_CODING_AGENT_DIR=/dev/null", "PI_CODING_AGENT_DIR=/dev/null", map[string]string{
			"workflow settings": "fail|/dev/null/pi-extensible-workflows/settings.json: cannot read: /dev/null is a device, not a directory" +
				"|PI_CODING_AGENT_DIR names /dev/null, which is not a directory: point PI_CODING_AGENT_DIR at Pi's agent directory, or unset it (Pi then uses ~/.pi/agent)",
			"pi-terminal-notifications": "warn|/dev/null/extensions/pi-terminal-notifications/config.json: cannot read: /dev/null is a device, not a directory; using the built-in terminal table" +
				"|PI_CODING_AGENT_DIR names /dev/null, which is not a directory: point PI_CODING_AGENT_DIR at Pi's agent directory, or unset it",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t).Set(tc.env)
			in := input(w, time.Second)
			rows := map[string]Row{"workflow settings": workflowSettingsRow(in)}
			for _, r := range configChecks(t.Context(), in) {
				rows[r.Name] = r
			}
			for name, want := range tc.rows {
				r, ok := rows[name]
				if !ok {
					t.Fatalf("no %s row in %+v", name, rows)
				}
				checkRowWant(t, r, want)
				for _, bad := range []string{"move /dev/null", "make /dev/", "a regular UTF-8", "edit /dev/null"} {
					if strings.Contains(r.Fix, bad) {
						t.Errorf("%s: fix %q says %q", name, r.Fix, bad)
					}
				}
			}
		})
	}
}

// The seed's config.json with no entries to blame (not JSON, not an
// object, not readable) gets a fix that fits, not "fix the entries named".
func TestDoctorSeedConfigWithoutEntries(t *testing.T) {
	const file = ".pi/agent/extensions/pi-terminal-notifications/config.json"
	for _, tc := range []struct{ name, text, want string }{
		{"cut short", "{", "warn|config.json:1: invalid JSON|make ~/" + file + ` a JSON object, such as {"termPrograms": {"MyTerminal": "osc777"}}, or remove it`},
		{"an array", "[]", "warn|config.json: not a JSON object; using the built-in terminal table|make ~/" + file + " a JSON object"},
		{"null", "null", "warn|config.json: not a JSON object|make ~/" + file + " a JSON object"},
		{"an entry", `{"fallback": "beep"}`, `warn|fallback = "beep"|fix the entries named in ~/` + file},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			w.File(file, tc.text, 0o600)
			r, ok := seedConfigRow(input(w, time.Second))
			if !ok {
				t.Fatal("no row")
			}
			checkRowWant(t, r, tc.want)
			if tc.name != "an entry" && (strings.Contains(r.Detail, "entries named") || strings.Contains(r.Fix, "entries named")) {
				t.Errorf("no entries, yet: %+v", r)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		w := doctortest.New(t)
		path := w.File(file, `{"fallback": "osc9"}`, 0o000)
		openDirsAbove(t, path)
		var r Row
		testenv.AsUnprivileged(t, path, func() { r, _ = seedConfigRow(input(w, time.Second)) })
		checkRowWant(t, r, "warn|permission denied|make "+path+" readable by the user running herdr-pi (chmod u+r "+path+", or chown it)")
		if strings.Contains(r.Detail+r.Fix, "entries named") {
			t.Errorf("no entries, yet: %+v", r)
		}
	})
}

// Once config.toml is rejected, the notification rows show the defaults
// and say why: "off (opt in with enabled = true)" to someone whose file
// says enabled = true sent them hunting in the wrong place.
func TestDoctorNotifyRowsSayARejectedConfigLeftTheDefaults(t *testing.T) {
	w := doctortest.New(t).Set("TERM_PROGRAM=WezTerm")
	w.File(".config/herdr-pi/config.toml", "[notify]\nchannel = \"terminal\"\n[notify.ntfy]\nenabled = true\ntopic = \"t\"\nserver = \"ftp://x\"\n", 0o600)
	in := input(w, time.Second)
	if in.ConfigErr == nil {
		t.Fatal("the config should be rejected")
	}
	c := in.Config
	in.Notify = notify.DoctorInput{Getenv: in.Env.Get, Config: notify.Config{
		Enabled: c.NotifyEnabled(), Channel: c.Notify.Channel, Table: osc.DefaultTable(),
		Ntfy: notify.NtfyConfig{Enabled: c.Notify.Ntfy.Enabled, Server: c.Notify.Ntfy.Server},
	}}
	rows := map[string]Row{}
	for _, r := range notifyChecks(t.Context(), in) {
		rows[r.Name] = r
	}
	const rejected = "~/.config/herdr-pi/config.toml was rejected"
	checkRowWant(t, rows["notification channel"], "ok|terminal: outside Herdr, so the OSC sequence your terminal understands (the built-in default: "+rejected)
	checkRowWant(t, rows["terminal protocol"], "ok|osc9, for TERM_PROGRAM=\"WezTerm\" (environment) ([notify] term_programs and fallback of ~/.config/herdr-pi/config.toml do not apply")
	checkRowWant(t, rows["ntfy"], "ok|off, the built-in default: "+rejected+" (see the config section), so its [notify.ntfy] does not apply until it is fixed")
	if strings.Contains(rows["ntfy"].Detail, "opt in") {
		t.Errorf("ntfy: %s", rows["ntfy"].Detail)
	}
}

// The log file itself must be one herdr-pi can append to: a directory, a
// FIFO or a symlink where herdr-pi.log should be means no line is ever
// written, which "herdr-pi logs to …" hid.
func TestDoctorLogRowChecksTheLogFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, file string)
		want string
	}{
		{"a directory", func(t *testing.T, file string) { mkdir(t, file, 0o700) },
			"warn|the log FILE is a directory, not a regular file: herdr-pi writes no log|remove FILE; the next herdr-pi creates it again"},
		{"a FIFO", func(t *testing.T, file string) {
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "warn|the log FILE is a named pipe (FIFO), not a regular file: herdr-pi writes no log|remove FILE"},
		{"a symlink", func(t *testing.T, file string) {
			if err := os.Symlink(file+".elsewhere", file); err != nil {
				t.Fatal(err)
			}
		}, "warn|the log FILE is a symlink, which herdr-pi does not write through|remove FILE"},
		{"a regular file", func(t *testing.T, file string) {
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "ok|herdr-pi logs to FILE (its directory is ours and 0700)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			dir := w.Paths().StateDir
			if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
				t.Fatal(err)
			}
			mkdir(t, dir, 0o700)
			file := filepath.Join(dir, "herdr-pi.log")
			tc.make(t, file)
			checkRowWant(t, logRow(input(w, time.Second)), strings.ReplaceAll(tc.want, "FILE", file))
		})
	}
}

// A runtime or log directory that does not exist yet is fine only when
// herdr-pi can make it: under an XDG_RUNTIME_DIR left over from another
// login (it no longer exists), wrap runs the agent without its control
// socket, and under an XDG_STATE_HOME it cannot write, without a log.
// "the first wrapper creates it" would then send the person looking
// elsewhere.
func TestDoctorRuntimeRowsSayWhatCannotBeMade(t *testing.T) {
	t.Run("XDG_RUNTIME_DIR does not exist", func(t *testing.T) {
		w := doctortest.New(t)
		gone := filepath.Join(w.Home, "run", "user", "1000")
		w.Set("XDG_RUNTIME_DIR=" + gone)
		base := w.Paths().RuntimeBase
		rows := runtimeRows(t, w)
		checkRowWant(t, rows["directory"], "fail|"+base+" cannot be made: "+gone+" does not exist|create "+gone+" (mkdir -m 700 -p "+gone+"), or point XDG_RUNTIME_DIR at a directory of yours that exists")
	})
	t.Run("XDG_STATE_HOME under a file-less path", func(t *testing.T) {
		w := doctortest.New(t)
		state := filepath.Join(w.Home, "state")
		w.Set("XDG_STATE_HOME=" + state)
		checkRowWant(t, logRow(input(w, time.Second)), "ok|"+filepath.Join(state, "herdr-pi")+" does not exist yet: the first herdr-pi creates it")
	})
	if os.Getuid() == 0 {
		return // root writes anywhere: the cases below cannot happen
	}
	t.Run("XDG_RUNTIME_DIR not writable", func(t *testing.T) {
		w := doctortest.New(t)
		ro := filepath.Join(w.Home, "ro")
		mkdir(t, ro, 0o555)
		w.Set("XDG_RUNTIME_DIR=" + ro)
		base := w.Paths().RuntimeBase
		rows := runtimeRows(t, w)
		checkRowWant(t, rows["directory"], "fail|"+base+" cannot be made: "+ro+" is not writable for uid "+strconv.Itoa(os.Getuid())+"|point XDG_RUNTIME_DIR at a directory of yours")
	})
	t.Run("XDG_STATE_HOME not writable", func(t *testing.T) {
		w := doctortest.New(t)
		ro := filepath.Join(w.Home, "ro")
		mkdir(t, ro, 0o555)
		w.Set("XDG_STATE_HOME=" + filepath.Join(ro, "state"))
		dir := w.Paths().StateDir
		checkRowWant(t, logRow(input(w, time.Second)), "warn|the log directory "+dir+" cannot be made: "+ro+" is not writable for uid "+strconv.Itoa(os.Getuid())+"; until then herdr-pi writes no log|make "+ro+" writable for you, or point XDG_STATE_HOME at a directory of yours")
	})
}

// runtimeRows are the runtime section's rows by name.
func runtimeRows(t *testing.T, w *doctortest.World) map[string]Row {
	rows := map[string]Row{}
	for _, r := range runtimeChecks(t.Context(), input(w, time.Second)) {
		rows[r.Name] = r
	}
	return rows
}

// The fix that says where herdr-pi goes without XDG_RUNTIME_DIR names the
// directory it really takes then: $TMPDIR when that is usable, else /tmp
// (settings.Resolve). "/tmp" under a TMPDIR sent the person looking in
// the wrong place.
func TestDoctorRuntimeFixNamesTheRealFallback(t *testing.T) {
	for _, tc := range []struct{ name, tmpdir, want string }{
		{"TMPDIR set", "TMP", "unset, herdr-pi uses TMP)"},
		{"TMPDIR unset", "", "unset, herdr-pi uses /tmp)"},
		{"TMPDIR relative", "rel/tmp", "unset, herdr-pi uses /tmp)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			gone := filepath.Join(w.Home, "run", "user", "1000")
			tmp := filepath.Join(w.Home, "tmp")
			mkdir(t, tmp, 0o700)
			w.Set("XDG_RUNTIME_DIR="+gone, "TMPDIR="+strings.ReplaceAll(tc.tmpdir, "TMP", tmp))
			rows := runtimeRows(t, w)
			checkRowWant(t, rows["directory"], "fail|"+gone+" does not exist|"+strings.ReplaceAll(tc.want, "TMP", tmp))
		})
	}
}

// A channel that cannot work here is fixed in herdr-pi's config file: the
// fix names that file where it is, as the config rows do.
func TestDoctorNotifyChannelFixNamesTheConfigFile(t *testing.T) {
	w := doctortest.New(t)
	w.File(".config/herdr-pi/config.toml", "[notify]\nchannel = \"herdr\"\n", 0o600)
	in := input(w, time.Second)
	if in.ConfigErr != nil {
		t.Fatal(in.ConfigErr)
	}
	in.Notify = notify.DoctorInput{Getenv: in.Env.Get, Config: notify.Config{
		Enabled: true, Channel: in.Config.Notify.Channel, Table: osc.DefaultTable(),
	}}
	rows := map[string]Row{}
	for _, r := range notifyChecks(t.Context(), in) {
		rows[r.Name] = r
	}
	r := rows["notification channel"]
	if r.Status != Fail || r.Fix != "edit [notify] channel in ~/.config/herdr-pi/config.toml" {
		t.Fatalf("row %+v", r)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
