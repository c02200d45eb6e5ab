package settings

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestUnknownKeyNamesFileLineAndTable(t *testing.T) {
	data := "[herdr]\nagent = \"pi\"\n\n[notify]\ncolour = \"red\"\n"
	_, problems := ParseConfig([]byte(data), "config.toml")
	if len(problems) != 1 {
		t.Fatalf("problems: %v", problems)
	}
	if got, want := problems[0].String(), `config.toml:5: unknown key "colour" in [notify]`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestProblemsAreCollectedAndLocated(t *testing.T) {
	data := strings.Join([]string{
		`# herdr-pi`,
		`[herdr]`,
		`source = "bad source!"`,
		`[detect]`,
		`debounce = "-1s"`,
		`[notify]`,
		`sound = "loud"`,
		`[notify.term_programs]`,
		`WezTerm = "osc777"`,
		`Foo = "beep"`,
		`[notify.ntfy]`,
		`enabled = true`,
		`priority = 9`,
		`[mystery]`,
		`x = 1`,
	}, "\n")
	_, problems := ParseConfig([]byte(data), "c.toml")
	want := []string{
		`c.toml:3: source = "bad source!"`,
		`c.toml:5: debounce = "-1s"`,
		`c.toml:7: sound = "loud": must be one of none, done, request`,
		`c.toml:10: term_programs.Foo = "beep"`,
		`c.toml:11: topic = ""`,
		`c.toml:13: priority = 9: must be 1 to 5`,
		`c.toml:14: unknown table [mystery]`,
	}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems:\n%v", len(problems), problems)
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i].String(), w) {
			t.Errorf("problem %d:\n got  %s\n want prefix %s", i, problems[i], w)
		}
	}
}

func TestBadValueTypeAndSyntax(t *testing.T) {
	_, problems := ParseConfig([]byte("[detect]\ndebounce = \"soon\"\n"), "c.toml")
	if len(problems) != 1 || problems[0].Line != 2 || !strings.Contains(problems[0].Msg, `"soon" is not a duration`) {
		t.Fatalf("got %v", problems)
	}
	_, problems = ParseConfig([]byte("[herdr]\nagent = 3\n"), "c.toml")
	if len(problems) != 1 || problems[0].Line != 2 {
		t.Fatalf("type mismatch: %v", problems)
	}
	_, problems = ParseConfig([]byte("[herdr\n"), "c.toml")
	if len(problems) != 1 || problems[0].Line == 0 {
		t.Fatalf("syntax: %v", problems)
	}
}

// docs/configuration.md promises every problem: a value of the wrong type
// costs only its own key, and the others are still decoded and checked.
func TestATypeMistakeHidesNoOtherProblem(t *testing.T) {
	data := strings.Join([]string{
		`[detect]`,
		`debounce = "20s"`,
		`startup_grace = 5`,
		`[herdr]`,
		`agent = 3`,
		`[notify]`,
		`enabled = "yes"`,
		`colour = 1`,
		`term_programs = { A = "osc9", B = 3, C = "beep" }`,
		`[notify.ntfy]`,
		`priority = 2.5`,
		`[open]`,
		`pi = [1]`,
		`[log]`,
		`level = "loud"`,
		`[mystery]`,
		`x = 1`,
	}, "\n")
	_, problems := ParseConfig([]byte(data), "c.toml")
	want := []string{
		`c.toml:2: debounce = "20s": must be between 0s and 10s`,
		`c.toml:3: key "detect.startup_grace": 5 is a number without a unit: a duration is a string with one, e.g. "5s" or "300ms"`,
		`c.toml:5: key "herdr.agent": must be a string, not a number`,
		`c.toml:7: key "notify.enabled": must be true or false, not a string`,
		`c.toml:8: unknown key "colour" in [notify]`,
		`c.toml:9: key "notify.term_programs.B": must be a string, not a number`,
		`c.toml:9: term_programs.C = "beep": must be one of osc9, osc99, osc777`,
		`c.toml:11: key "notify.ntfy.priority": must be a whole number, not a decimal number`,
		`c.toml:13: key "open.pi": must be a string or a list of strings`,
		`c.toml:15: level = "loud": must be one of info, debug`,
		`c.toml:16: unknown table [mystery]`,
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d:\n got  %s\n want %s", i, got[i], w)
		}
	}
	_, problems = ParseConfig([]byte("detect = 5\nnotify = [1]\n"), "c.toml")
	if len(problems) != 2 || problems[0].String() != `c.toml:1: key "detect": must be a table, not a number` ||
		problems[1].String() != `c.toml:2: key "notify": must be a table, not an array` {
		t.Errorf("tables of the wrong type: %q", problems)
	}
}

// A file herdr-pi may not read says so through errors.Is, so doctor can
// say to fix its permissions rather than a line.
func TestConfigErrorUnwrapsWhyTheFileWasNotRead(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadConfig(dir, "dir")
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("a directory: %v", err)
	}
	if errors.Is(err, fs.ErrPermission) || len(ce.Unwrap()) != 1 {
		t.Errorf("a directory unwraps to %v", ce.Unwrap())
	}
	_, problems := ParseConfig([]byte("[notify]\ncolour = 1\n"), "c.toml")
	if errs := (&ConfigError{Problems: problems}).Unwrap(); len(problems) != 1 || len(errs) != 0 {
		t.Errorf("a problem on a line unwraps to %v", errs)
	}
	p := fileProblem(&FileError{Path: "c.toml", Reason: "cannot open: permission denied", Err: &fs.PathError{Op: "open", Path: "c.toml", Err: syscall.EACCES}}, "c.toml", "")
	if err := error(&ConfigError{Problems: []Problem{p}}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("permission denied does not unwrap to fs.ErrPermission: %v", err)
	}
}

func TestValidConfigOverridesDefaults(t *testing.T) {
	cfg, problems := ParseConfig([]byte("[detect]\ndebounce = \"500ms\"\n[notify]\nenabled = false\n[notify.term_programs]\nMyTerm = \"osc9\"\n"), "c.toml")
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	if cfg.Detect.Debounce.D() != 500*time.Millisecond || cfg.NotifyEnabled() || cfg.Notify.TermPrograms["MyTerm"] != "osc9" || cfg.Herdr.Source != "custom:herdr-pi" {
		t.Fatalf("cfg %+v", cfg)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := LoadConfig(filepath.Join(dir, "missing.toml"), "missing.toml")
	if err != nil || cfg.Herdr.Source != "custom:herdr-pi" {
		t.Fatalf("missing file: %v %+v", err, cfg)
	}
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte("[notify]\ncolour = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = LoadConfig(p, "config.toml")
	var ce *ConfigError
	if !errors.As(err, &ce) || cfg.Notify.Channel != "auto" {
		t.Fatalf("bad file must give defaults and a ConfigError: %v", err)
	}
}

func TestResolvePaths(t *testing.T) {
	p := Resolve(Env{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg", "PI_CODING_AGENT_DIR": "~/agent"})
	if p.ConfigFile != "/cfg/herdr-pi/config.toml" || p.ManifestDir != "/cfg/herdr-pi/manifests" ||
		p.StateDir != "/home/u/.local/state/herdr-pi" || p.PiAgentDir != "/home/u/agent" {
		t.Fatalf("%+v", p)
	}
	p = Resolve(Env{"HOME": "/home/u", "XDG_CONFIG_HOME": "relative", "HERDR_PI_CONFIG": "/x.toml"})
	if p.ConfigFile != "/x.toml" || p.ConfigDir != "/home/u/.config/herdr-pi" || p.PiAgentDir != "/home/u/.pi/agent" {
		t.Fatalf("%+v", p)
	}
	if got := p.Pretty("/home/u/.config/herdr-pi/config.toml"); got != "~/.config/herdr-pi/config.toml" {
		t.Fatal(got)
	}
	// HERDR_PI_CONFIG set where no shell expands "~" (a Herdr layout's
	// env, a systemd unit) means the home, as PI_CODING_AGENT_DIR's does;
	// anything else is taken as given.
	for v, want := range map[string]string{
		"~/herdr-pi.toml": "/home/u/herdr-pi.toml", "/abs/c.toml": "/abs/c.toml", "rel/c.toml": "rel/c.toml", "~other/c.toml": "~other/c.toml",
	} {
		if got := Resolve(Env{"HOME": "/home/u", "HERDR_PI_CONFIG": v}).ConfigFile; got != want {
			t.Errorf("HERDR_PI_CONFIG=%s: config file %q, want %q", v, got, want)
		}
	}
	// PI_CODING_AGENT_DIR as Pi reads it (its normalizePath): "~" and
	// "~/…" are under home, a file:// URL is its path, the rest as given.
	for dir, want := range map[string]string{
		"~": "/home/u", "~/": "/home/u", "~/a/../b": "/home/u/b", "file:///srv/pi%20agent": "/srv/pi agent",
		"/abs/agent": "/abs/agent", "rel/agent": "rel/agent", "~other/agent": "~other/agent",
	} {
		if got := Resolve(Env{"HOME": "/home/u", "PI_CODING_AGENT_DIR": dir}).PiAgentDir; got != want {
			t.Errorf("PI_CODING_AGENT_DIR=%s: agent dir %q, want %q", dir, got, want)
		}
	}
}

func TestHerdrEnv(t *testing.T) {
	full := Env{"HERDR_ENV": "1", "HERDR_SOCKET_PATH": "/tmp/h.sock", "HERDR_PANE_ID": "w1:p1"}
	if h, ok := HerdrEnv(full); !ok || h.PaneID != "w1:p1" {
		t.Fatal("complete env not detected")
	}
	for _, e := range []Env{
		{"HERDR_ENV": "1"},
		{"HERDR_ENV": "0", "HERDR_SOCKET_PATH": "/s", "HERDR_PANE_ID": "w1:p1"},
		{"HERDR_ENV": "1", "HERDR_SOCKET_PATH": "  ", "HERDR_PANE_ID": "w1:p1"},
	} {
		if _, ok := HerdrEnv(e); ok {
			t.Errorf("incomplete env %v accepted", e)
		}
	}
	if m := MissingHerdr(Env{"HERDR_ENV": "1"}); len(m) != 2 {
		t.Fatal(m)
	}
}

// FuzzParseConfig: any input yields either a config or located problems,
// never a panic, and a problem always names the file.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[herdr]\nagent = \"pi\"\n"))
	f.Add([]byte("[notify.term_programs]\n\"My Term\" = \"osc9\"\n"))
	f.Add([]byte("[notify]\ncolour = 1\n[[x]]\ny = [1, {z = 2}]\n"))
	f.Add([]byte("a.b.c = 1\n'q.k' = \"v\" # c\n"))
	long := strings.Repeat("k", 170)
	f.Add([]byte("[notify]\n" + long + " = 1\n" + long + " = 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, problems := ParseConfig(data, "f.toml")
		for _, p := range problems {
			if p.File != "f.toml" || p.Msg == "" || p.Line < 0 {
				t.Fatalf("bad problem %+v", p)
			}
			// wrap prints every problem at its start, one a line.
			if strings.ContainsAny(p.Msg, "\n\r") || len(p.Msg) > 400 {
				t.Fatalf("problem of %d bytes, or of more than one line: %.300q", len(p.Msg), p.Msg)
			}
			// However long the key, the message keeps its way out.
			if strings.Contains(p.Msg, " is set twice") && !strings.HasSuffix(p.Msg, "; keep one") {
				t.Fatalf("a key set twice without its fix: %.300q", p.Msg)
			}
		}
	})
}

// The agent id goes raw into every report, status line and log line: a
// config that sets it to control characters or megabytes is a problem, and
// the message says what is allowed without echoing the value whole.
func TestAgentIDsAreValidated(t *testing.T) {
	huge := strings.Repeat("a", 50<<20)
	for _, c := range []struct{ name, toml, want string }{
		{"escape", "[herdr]\nagent = \"pi\\u001b]0;pwned\\u0007\"\n", `c.toml:2: agent "pi\x1b]0;pwned\a" is not a valid agent id: use 1 to 64 characters from A-Z a-z 0-9 . _ - :`},
		{"newline", "[herdr]\nagent = \"pi\\nINFO forged\"\n", `c.toml:2: agent "pi\nINFO forged" is not a valid agent id`},
		{"space", "[detect]\nagent = \"my agent\"\n", `c.toml:2: agent "my agent" is not a valid agent id`},
		{"65 characters", "[herdr]\nagent = \"" + strings.Repeat("a", 65) + "\"\n", "… (65 bytes) is not a valid agent id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, problems := ParseConfig([]byte(c.toml), "c.toml")
			if len(problems) != 1 || !strings.Contains(problems[0].String(), c.want) {
				t.Fatalf("problems %q, want one containing %q", problems, c.want)
			}
		})
	}
	// Empty is the default for both: the pane shows the agent detection
	// picks, and detection picks it from the command.
	if _, problems := ParseConfig([]byte("[herdr]\nagent = \"\"\n[detect]\nagent = \"\"\n"), "c.toml"); len(problems) != 0 {
		t.Errorf("empty agents: %q, want no problems", problems)
	}
	for _, ok := range []string{"pi", "claude", "herdr:pi", "pi-coding-agent", "gpt_5.1", strings.Repeat("a", 64)} {
		if err := CheckAgent(ok); err != nil {
			t.Errorf("CheckAgent(%q) = %v", ok, err)
		}
	}
	err := CheckAgent(huge)
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "(52428800 bytes)") {
		t.Fatalf("a 50 MiB agent id: %d-byte error %.200q", len(err.Error()), err)
	}
}

// Issue 10: notify.finished_after is a duration, 20s by default; 0s tells
// every run, a negative one is a problem on its line.
func TestFinishedAfter(t *testing.T) {
	if d := Defaults().Notify.FinishedAfter.D(); d != 20*time.Second {
		t.Fatalf("default %v", d)
	}
	cfg, problems := ParseConfig([]byte("[notify]\nfinished_after = \"0s\"\n"), "c.toml")
	if len(problems) != 0 || cfg.Notify.FinishedAfter.D() != 0 {
		t.Fatalf("0s: %v %v", cfg.Notify.FinishedAfter, problems)
	}
	_, problems = ParseConfig([]byte("[notify]\nsound = \"none\"\nfinished_after = \"-1s\"\n"), "c.toml")
	if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), `c.toml:3: finished_after = "-1s": must be between 0s`) {
		t.Fatalf("-1s: %v", problems)
	}
}

// A table a file names only through its sub-tables ([notify.ntfy] with no
// [notify] line, or dotted keys) is a table all the same: TOML defines it
// implicitly, and the configuration page shows [notify.ntfy] on its own.
func TestATableDefinedOnlyByItsSubTablesIsRead(t *testing.T) {
	for _, data := range []string{
		"[notify.ntfy]\nenabled = true\ntopic = \"builds\"\n",
		"notify.ntfy.enabled = true\nnotify.ntfy.topic = \"builds\"\n",
		"[notify.term_programs]\nMyTerminal = \"osc777\"\n[notify.ntfy]\nenabled = true\ntopic = \"builds\"\n",
	} {
		cfg, problems := ParseConfig([]byte(data), "c.toml")
		if len(problems) != 0 {
			t.Errorf("%q: problems %q", data, problems)
			continue
		}
		if !cfg.Notify.Ntfy.Enabled || cfg.Notify.Ntfy.Topic != "builds" {
			t.Errorf("%q: ntfy not read: %+v", data, cfg.Notify.Ntfy)
		}
	}
	for _, data := range []string{"[mystery.inner]\nx = 1\n", "# dotted\nmystery.x = 1\n", "[notify]\nmystery.x = 1\n"} {
		want := `c.toml:2: unknown table [mystery]`
		switch {
		case strings.HasPrefix(data, "[mystery"):
			want = `c.toml:1: unknown table [mystery]`
		case strings.HasPrefix(data, "[notify]"):
			want = `c.toml:2: unknown table [notify.mystery]`
		}
		_, problems := ParseConfig([]byte(data), "c.toml")
		if len(problems) != 1 || problems[0].String() != want {
			t.Errorf("%q: an unknown implicit table: %q, want %q", data, problems, want)
		}
	}
}

// Without a usable HOME (unset, as under env -i or some service managers,
// or relative) herdr-pi's files are not looked for relative to the working
// directory: a checked-out repository could otherwise hand herdr-pi its
// config.toml (an [open] pi command, an ntfy server), its manifests and
// Pi's settings, and receive the log. The home comes from the user
// database then, as Pi's (Node's os.homedir) does.
func TestResolveNeverMakesPathsRelativeToTheWorkingDirectory(t *testing.T) {
	t.Setenv("HOME", "") // as the process sees it too
	for _, env := range []Env{{}, {"HOME": ""}, {"HOME": "relative"}, {"HOME": "relative", "XDG_CONFIG_HOME": "cfg"}} {
		p := Resolve(env)
		for name, path := range map[string]string{"home": p.Home, "config": p.ConfigFile, "manifests": p.ManifestDir,
			"state": p.StateDir, "runtime": p.RuntimeBase, "pi agent dir": p.PiAgentDir} {
			if !filepath.IsAbs(path) {
				t.Errorf("%v: %s %q is relative", env, name, path)
			}
		}
	}
}

// The runtime directory names the sockets that status, waiting and the
// probe look up from anywhere: a relative TMPDIR (with no XDG_RUNTIME_DIR)
// would put it under whatever directory each command runs in.
func TestRuntimeBaseIsAbsoluteUnderARelativeTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", "tmp") // as the process sees it too
	for _, env := range []Env{{"HOME": "/home/u", "TMPDIR": "tmp"}, {"HOME": "/home/u", "XDG_RUNTIME_DIR": "run", "TMPDIR": "tmp"}} {
		if p := Resolve(env); !filepath.IsAbs(p.RuntimeBase) {
			t.Errorf("%v: runtime base %q is relative", env, p.RuntimeBase)
		}
	}
}

// A table where a value belongs is named as a table, whether a header or a
// dotted key made it, and an empty TERM_PROGRAM name is the entry at fault,
// on its own line: the decoder's type table has no type for an implicit
// table, and an empty key overwrites its parent's.
func TestWrongTypeNamesTheTypeFound(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"[notify.term_programs]\na.b = \"osc9\"\n", `c.toml:2: key "notify.term_programs.a": must be a string, not a table`},
		{"[notify]\nsound.x = \"done\"\n", `c.toml:2: key "notify.sound": must be a string, not a table`},
		{"[notify]\nterm_programs.x.y = 1\n", `c.toml:2: key "notify.term_programs.x": must be a string, not a table`},
		{"[notify.term_programs]\n\"\" = \"osc9\"\n", `c.toml:2: term_programs."": an empty name matches no terminal; name a TERM_PROGRAM value, e.g. WezTerm = "osc9"`},
		{"[notify.term_programs]\n\" \" = 7\n", `c.toml:2: key "notify.term_programs.\" \"": must be a string, not a number`},
		{"notify.term_programs = \"osc9\"\n", `c.toml:1: key "notify.term_programs": must be a table, not a string`},
		{"[herdr]\nagent = [1]\n", `c.toml:2: key "herdr.agent": must be a string, not an array`},
		{"[herdr]\nagent = 1979-05-27\n", `c.toml:2: key "herdr.agent": must be a string, not a date or time`},
		{"[[herdr]]\nagent = \"pi\"\n", `c.toml:1: key "herdr": must be a table, not an array of tables`},
		{"[mystery]\n", `c.toml:1: unknown table [mystery]`},
		{"mystery.x = 1\n", `c.toml:1: unknown table [mystery]`},
	} {
		_, problems := ParseConfig([]byte(tc.data), "c.toml")
		if len(problems) != 1 || problems[0].String() != tc.want {
			t.Errorf("%q:\n got  %v\n want [%s]", tc.data, problems, tc.want)
		}
	}
}

// The config problem of a bad ntfy server shows it with its password
// masked: wrap prints it on stderr, doctor in its report.
func TestBadNtfyServerHidesItsPassword(t *testing.T) {
	_, problems := ParseConfig([]byte("[notify.ntfy]\nserver = \"https://user:hunter2@ntfy.example.com/?x=1\"\n"), "c.toml")
	want := `c.toml:2: server = "https://user:xxxxx@ntfy.example.com/?x=1": must be an http(s) URL with a host and no query or fragment`
	if len(problems) != 1 || problems[0].String() != want {
		t.Fatalf("got  %v\nwant [%s]", problems, want)
	}
}

// A duration without a unit says so: startup_grace = 5 was reported as
// "\"5\" is not a duration", quoting a number the file never quoted.
func TestDurationWithoutAUnit(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`5`, `key "detect.startup_grace": 5 is a number without a unit: a duration is a string with one, e.g. "5s" or "300ms"`},
		{`0.5`, `key "detect.startup_grace": 0.5 is a number without a unit: a duration is a string with one, e.g. "0.5s" or "300ms"`},
		{`"5"`, `key "detect.startup_grace": "5" has no unit (write it like "5s" or "300ms")`},
		{`true`, `key "detect.startup_grace": must be a duration, a string such as "300ms" or "2s", not true or false`},
		{`"soon"`, `key "detect.startup_grace": "soon" is not a duration (write it like "300ms" or "2s")`},
	} {
		_, problems := ParseConfig([]byte("[detect]\nstartup_grace = "+tc.value+"\n"), "c.toml")
		if len(problems) != 1 || problems[0].Line != 2 || problems[0].Msg != tc.want {
			t.Errorf("startup_grace = %s:\n got  %v\n want c.toml:2: %s", tc.value, problems, tc.want)
		}
	}
	// 0 needs no unit, and stays accepted.
	if cfg, problems := ParseConfig([]byte("[detect]\nstartup_grace = 0\n"), "c.toml"); len(problems) != 0 || cfg.Detect.StartupGrace != 0 {
		t.Errorf("startup_grace = 0: %v", problems)
	}
}

// A key or table given twice names both lines and what to do, in words a
// person reads in `doctor` (the parser's own: "Key 'detect.debounce' has
// already been defined.", no first line).
func TestDuplicateKeyNamesBothLines(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"[detect]\ndebounce = \"300ms\"\ndebounce = \"200ms\"\n", `c.toml:3: "detect.debounce" is set twice (lines 2 and 3); keep one`},
		{"[detect]\ndebounce = \"300ms\"\n[notify]\n[detect]\n", `c.toml:4: "detect" is set twice (lines 1 and 4); keep one`},
		{"[notify]\nntfy = 1\n[notify.ntfy]\n", `c.toml:3: "notify.ntfy" is set twice (lines 2 and 3); keep one`},
	} {
		_, problems := ParseConfig([]byte(c.data), "c.toml")
		if len(problems) != 1 || problems[0].String() != c.want {
			t.Errorf("%q: got %q, want %q", c.data, problems, c.want)
		}
	}
}

// A duration out of range is quoted as the file wrote it: "60m" read back
// as "1h0m0s" is a value the person never typed and cannot find.
func TestOutOfRangeDurationQuotesTheFile(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"[detect]\ndebounce = \"60m\"\n", `c.toml:2: debounce = "60m": must be between 0s and 10s`},
		{"[detect]\nstartup_grace = \"90s\"\n", `c.toml:2: startup_grace = "90s": must be between 0s and 1m`},
		{"[notify]\nfinished_after = \"1500m\"\n", `c.toml:2: finished_after = "1500m": must be between 0s (every run) and 24h`},
		{"[notify.ntfy]\ntimeout = \"120000ms\"\n", `c.toml:2: timeout = "120000ms": must be above 0s and at most 1m`},
	} {
		_, problems := ParseConfig([]byte(c.data), "c.toml")
		if len(problems) != 1 || problems[0].String() != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.data, problems, c.want)
		}
	}
}

// [log] level takes its words in any case, as HERDR_PI_LOG does, and
// gives the canonical lower-case form to the rest of the program.
func TestLogLevelIgnoresCase(t *testing.T) {
	for data, want := range map[string]string{
		"[log]\nlevel = \"DEBUG\"\n": "debug",
		"[log]\nlevel = \"Info\"\n":  "info",
		"[log]\nlevel = \"debug\"\n": "debug",
	} {
		cfg, problems := ParseConfig([]byte(data), "c.toml")
		if len(problems) != 0 || cfg.Log.Level != want {
			t.Errorf("%q: level %q, problems %q; want %q and none", data, cfg.Log.Level, problems, want)
		}
	}
	_, problems := ParseConfig([]byte("[log]\nlevel = \"LOUD\"\n"), "c.toml")
	if want := `c.toml:2: level = "LOUD": must be one of info, debug`; len(problems) != 1 || problems[0].String() != want {
		t.Errorf("LOUD: got %q, want %q", problems, want)
	}
}

// A syntax error is placed on the line that holds it, and names a key
// only when that key is on that line: the parser counts the newline that
// ends an unclosed table header as the next line's, and its "last key" is
// the last key it read, often a table above the mistake.
func TestSyntaxErrorLineAndKey(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"[detect\ndebounce = \"3s\"\n", `c.toml:1: expected '.' or ']' to end table name, but got '\n' instead`},
		{"[a]\nb = 1\n[c\n", `c.toml:3: expected '.' or ']' to end table name, but got '\n' instead`},
		{"[detect]\ndebounce \"3s\"\n", `c.toml:2: expected '.' or '=', but got '"' instead`},
		{"[detect]\ndebounce = \"3s\"\nx\n", `c.toml:3: expected '.' or '=', but got '\n' instead`},
		// The key on the line of the mistake is still named.
		{"[detect]\ndebounce = \n", `c.toml:2: key "detect.debounce": expected value but found '\n' instead`},
	} {
		_, problems := ParseConfig([]byte(c.data), "c.toml")
		if len(problems) != 1 || problems[0].String() != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.data, problems, c.want)
		}
	}
}

// An unknown key or table that is a typo of a known one (a letter wrong,
// missing, extra or swapped, or another case) names the one meant.
func TestUnknownKeyNamesTheOneMeant(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"[notify]\nchanel = \"off\"\n", `c.toml:2: unknown key "chanel" in [notify]; did you mean "channel"?`},
		{"[notify]\nChannel = \"off\"\n", `c.toml:2: unknown key "Channel" in [notify]; did you mean "channel"?`},
		{"[Notify]\nchannel = \"off\"\n", `c.toml:1: unknown table [Notify]; did you mean [notify]?`},
		{"[detect]\ndebounse = \"1s\"\n", `c.toml:2: unknown key "debounse" in [detect]; did you mean "debounce"?`},
		{"[notify.ntfy]\ntopik = \"x\"\n", `c.toml:2: unknown key "topik" in [notify.ntfy]; did you mean "topic"?`},
		{"[notify]\ncolour = \"red\"\n", `c.toml:2: unknown key "colour" in [notify]`},
		{"lvl = 1\n", `c.toml:1: unknown key "lvl" at the top level`},
	} {
		_, problems := ParseConfig([]byte(c.data), "c.toml")
		if len(problems) != 1 || problems[0].String() != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.data, problems, c.want)
		}
	}
}
