package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/settings"
)

type detectOptions struct {
	Agent    string
	Manifest string
	Raw      bool
	JSON     bool
	Rows     int
	Cols     int
	Title    *string
	Progress *string
	File     string
	// reported: the verdict was written (or tried to be); a failure
	// after it is the write's, with nothing more to print.
	reported bool
}

func detectCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "detect",
		Usage:     "classify a screen with the detection manifests and say which rule matched",
		ArgsUsage: "[FILE|-]",
		Description: "Reads a screen — plain text (rows separated by newlines), or raw terminal bytes\n" +
			"with --raw, which are drawn on a shadow terminal first — and classifies it with\n" +
			"the agent's detection manifest exactly as herdr-pi wrap does. Prints the state,\n" +
			"the winning rule and its region, and why the other rules that could have won\n" +
			"did not match. Reads stdin when FILE is - or missing (missing on a terminal is\n" +
			"an error: nothing was piped in). See docs/detect.md.\n\n" +
			"Exits 0 after printing a verdict, 1 when the manifest or the screen cannot be\n" +
			"read or the screen is empty without --title or --progress (no capture is not\n" +
			"an idle screen), 2 for a usage mistake (--json then still prints one object\n" +
			"saying why).\n\n" +
			"Examples:\n" +
			"  tmux capture-pane -p | herdr-pi detect\n" +
			"  herdr-pi detect --agent pi --title 'π - api' screen.txt\n" +
			"  herdr-pi detect --manifest ./mine.toml --json screen.txt\n" +
			"  herdr-pi detect --raw --size 40x120 session.raw",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "manifest id or alias (default: detect.agent from the config, else pi)"},
			&cli.StringFlag{Name: "manifest", Usage: "manifest `FILE` to use instead of the installed ones"},
			&cli.BoolFlag{Name: "raw", Usage: "input is raw terminal bytes; draw them on a shadow screen first"},
			&cli.StringFlag{Name: "size", Value: "24x80", Usage: "shadow screen `ROWSxCOLS` for --raw"},
			&cli.StringFlag{Name: "title", Usage: "OSC title for osc_title rules (with --raw: overrides the stream's)"},
			&cli.StringFlag{Name: "progress", Usage: "OSC 9;4 payload for osc_progress rules, e.g. 4;3; (with --raw: overrides)"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as one JSON object (format: docs/detect.md)"},
		},
		Action: withArgs("detect", func(c *cli.Context, args []string) error {
			opts := &detectOptions{Agent: c.String("agent"), Manifest: c.String("manifest"),
				Raw: c.Bool("raw"), JSON: c.Bool("json")}
			err := detectAction(c, f, opts, args)
			if opts.JSON && err != nil && !opts.reported {
				err = failedJSON(f.IO.Out, render.DetectFormat, detectErrorCode(err), err)
			}
			return err
		}),
	}
}

// detectAction checks detect's arguments and runs it.
func detectAction(c *cli.Context, f *Factory, opts *detectOptions, args []string) error {
	if len(args) > 1 {
		return usagef("detect", "one input at most (got %d: %s)", len(args), strings.Join(args, " "))
	}
	if len(args) == 1 {
		opts.File = args[0]
	}
	// Without a FILE, a terminal on stdin means nothing was piped
	// in: reading it would wait, silently, for a screen nobody
	// knows to type. "-" still reads it for whoever asks.
	if opts.File == "" && isTerminal(f.IO.In) {
		return usagef("detect", "no screen to read: give a FILE, or pipe one in (tmux capture-pane -p | herdr-pi detect); - reads this terminal until Ctrl-D")
	}
	if c.IsSet("title") {
		v := c.String("title")
		opts.Title = &v
	}
	if c.IsSet("progress") {
		v := c.String("progress")
		opts.Progress = &v
	}
	rows, cols, ok := parseSizeFlag(c.String("size"))
	if !ok {
		return usagef("detect", "--size %q: want ROWSxCOLS, each from 1 to 1000, e.g. 40x120", c.String("size"))
	}
	opts.Rows, opts.Cols = rows, cols
	// A plain-text screen is as big as its rows: a --size for it
	// would be ignored, and the person who gave it would not know.
	if c.IsSet("size") && !opts.Raw {
		return usagef("detect", "--size is the shadow screen for --raw input: add --raw if FILE is raw terminal bytes, or leave --size out (a plain-text screen is as big as its rows)")
	}
	// An empty value ("--agent=" or "--agent $UNSET") would otherwise
	// pass as no flag, and the manifest would quietly come from elsewhere.
	switch {
	case c.IsSet("agent") && opts.Agent == "":
		return usagef("detect", "--agent is empty: give a manifest id (--agent pi), or leave the flag out to take it from the config")
	case c.IsSet("manifest") && opts.Manifest == "":
		return usagef("detect", "--manifest is empty: give a manifest FILE, or leave the flag out")
	case opts.Agent != "" && opts.Manifest != "":
		return usagef("detect", "use --agent or --manifest, not both")
	case opts.Agent != "":
		if err := settings.CheckAgent(opts.Agent); err != nil {
			return usagef("detect", "--agent: %v", err)
		}
	}
	return detectRun(f, opts)
}

// detectError is a failure of detect's that `detect --json` names by code
// (docs/detect.md): which of its inputs could not be had.
type detectError struct {
	code string
	err  error
}

func (e *detectError) Error() string { return e.err.Error() }
func (e *detectError) Unwrap() error { return e.err }

// detectErrorCode names a detect failure for scripts.
func detectErrorCode(err error) string {
	var (
		usage *usageError
		de    *detectError
	)
	switch {
	case errors.As(err, &usage):
		return "usage"
	case errors.As(err, &de):
		return de.code
	}
	return "failed"
}

func parseSizeFlag(s string) (rows, cols int, ok bool) {
	r, c, found := strings.Cut(s, "x")
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	return rows, cols, found && err1 == nil && err2 == nil && rows > 0 && cols > 0 && rows <= 1000 && cols <= 1000
}

// detectInputLimit bounds what detect reads: a screen is small, a raw
// recording of a long session is not, but neither needs more than this.
const detectInputLimit = 256 << 20

func detectRun(f *Factory, opts *detectOptions) error {
	io := f.IO
	manifest, err := detectManifest(f, opts)
	if err != nil {
		return err
	}
	data, err := readDetectInput(io, opts.File)
	if err != nil {
		return &detectError{code: "unreadable_input", err: err}
	}
	// With --title or --progress the person gives what is classified, and
	// an empty screen beside it is what they mean.
	if len(data) == 0 && opts.Title == nil && opts.Progress == nil {
		return &detectError{code: "unreadable_input", err: emptyInput(opts.File)}
	}
	in := detect.Input{}
	if opts.Raw {
		s := screen.New(opts.Rows, opts.Cols)
		if err := s.Write(data); err != nil {
			tell(io.Err, "herdr-pi detect: %v\n", err)
		}
		snap := s.Snapshot()
		s.Close()
		in = detect.Input{Text: snap.Text, Title: snap.Title, Progress: snap.Progress}
	} else {
		text := strings.ToValidUTF8(string(data), "\uFFFD")
		// A captured screen saved to a file ends with a newline the screen
		// itself does not have.
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		in.Text = text
	}
	if opts.Title != nil {
		in.Title = *opts.Title
	}
	if opts.Progress != nil {
		in.Progress = *opts.Progress
	}
	ex := manifest.Explain(in)
	opts.reported = true
	if opts.JSON {
		return render.DetectJSON(io.Out, manifest, ex, in, opts.Raw)
	}
	return render.DetectText(io.Out, manifest, ex)
}

func detectManifest(f *Factory, opts *detectOptions) (*detect.Manifest, error) {
	if opts.Manifest != "" {
		// Read here, not by detect.LoadFile: the person named this path,
		// so a directory or a pipe there is to be named otherwise, not
		// removed.
		data, err := settings.ReadNamedFile(opts.Manifest, settings.TOML, "name a regular file in --manifest instead")
		if errors.Is(err, fs.ErrNotExist) { // not a symlink that leads nowhere: that one says so
			// A path mistyped, or relative to another directory: say
			// where it was looked for and the way out.
			where := ""
			if !filepath.IsAbs(opts.Manifest) {
				if cwd, err := os.Getwd(); err == nil {
					where = " (looked in " + render.Clean(cwd) + ")"
				}
			}
			return nil, &detectError{code: "unreadable_manifest", err: fileError(opts.Manifest, fmt.Errorf(
				"%s: does not exist%s: give the path of a manifest file, or leave --manifest out to use the installed manifests", opts.Manifest, where))}
		}
		if err != nil {
			return nil, &detectError{code: "unreadable_manifest", err: fileError(opts.Manifest, err)}
		}
		m, err := detect.Parse(data, opts.Manifest)
		if err != nil {
			return nil, &detectError{code: "unreadable_manifest", err: fileError(opts.Manifest, err)}
		}
		return m, nil
	}
	paths := f.Paths()
	agent := opts.Agent
	if agent == "" {
		cfg, cfgErr := f.Config()
		if cfgErr != nil {
			tellConfigProblems(f.IO.Err, "herdr-pi detect", cfgErr)
		}
		agent = cmpOr(cfg.Detect.Agent, "pi")
	}
	set, problems := detect.Load(paths.ManifestDir)
	tellManifestProblems(f.IO.Err, "herdr-pi detect", problems)
	m, ok := set.Lookup(agent)
	if !ok && slices.Contains(doctor.ManifestsWithoutBuiltIn(problems), agent) {
		// The file is there, with the problems said above: "add" it
		// would send the person looking for a file they have.
		return nil, &detectError{code: "no_manifest", err: fmt.Errorf("no manifest for agent %q: fix %s (its problems are above), then check it with --manifest",
			agent, paths.Pretty(filepath.Join(paths.ManifestDir, agent+".toml")))}
	}
	if !ok {
		return nil, &detectError{code: "no_manifest", err: fmt.Errorf("no manifest for agent %q (known: %s%s; add %s/%s.toml or use --manifest)",
			agent, strings.Join(set.Names(), ", "), meantAgent(agent, set.Names()), paths.Pretty(paths.ManifestDir), agent)}
	}
	return m, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func readDetectInput(io IO, file string) ([]byte, error) {
	var r interface{ Read([]byte) (int, error) } = io.In
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fileError(file, &wrappedError{msg: file + ": " + screenFileProblem(file, err), err: err})
		}
		defer f.Close()
		// A directory opens; reading it fails with "read /etc: is a
		// directory", which says neither what was wanted nor what to do.
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fileError(file, fmt.Errorf("%s is a directory: give a screen file", file))
		}
		r = f
	}
	data, err := readAllLimited(r, detectInputLimit)
	if err != nil {
		// A read error of the file names it already (*fs.PathError): the
		// message says the path once, in "reading".
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fileError(file, fmt.Errorf("reading %s: %w", cmpOr(file, "stdin"), err))
	}
	return data, nil
}

// emptyInput is the error for a screen input of no bytes at all: no
// capture (one that failed, a pipe from a command that printed nothing),
// not a blank screen, which still has its rows. Classified, it would read
// as idle, and a script would act on a pane nobody saw.
func emptyInput(file string) error {
	if file == "" || file == "-" {
		return errors.New("stdin is empty: there is no screen in it to classify; pipe one in (tmux capture-pane -p | herdr-pi detect)")
	}
	return fileError(file, fmt.Errorf("%s is empty: there is no screen in it to classify; give the file that holds the screen (tmux capture-pane -p > FILE)", file))
}

// screenFileProblem says why detect could not open its screen file, and
// the way out: the errno alone names neither.
func screenFileProblem(file string, err error) string {
	var pe *fs.PathError
	why := err.Error()
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if link, target := settings.BrokenLink(file); link == file {
			return "is a symlink to " + target + ", which does not exist; point it at the screen file"
		} else if link != "" {
			return "cannot read: " + link + " is a symlink to " + target + ", which does not exist; point it at an existing directory"
		}
		return "no such file: give the file that holds the screen, or pipe the screen in (--agent, not FILE, names the agent)"
	case errors.Is(err, syscall.ENOTDIR):
		if dir := settings.FileOnTheWay(file); dir != "" {
			return "cannot read: " + settings.NotADirectory(dir)
		}
	case errors.Is(err, syscall.ELOOP):
		return why + "; " + settings.LoopFix()
	case errors.Is(err, fs.ErrPermission):
		return why + "; " + settings.ReadPermissionFix(file, "you")
	}
	return why
}

func readAllLimited(r interface{ Read([]byte) (int, error) }, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(readerFunc(r.Read), int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		// A screen is a few KiB (a raw session some MiB): past the limit
		// the person gave something else, and is told what to give.
		return nil, fmt.Errorf("input larger than %d MiB, which is no screen: give a capture of one (tmux capture-pane -p), or with --raw the bytes of one session", limit>>20)
	}
	return data, nil
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
