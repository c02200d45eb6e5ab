package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// closeFormat names the shape of `close --json` (docs/open.md).
const closeFormat = "herdr-pi.close/1"

type closeOptions struct {
	Run  string
	JSON bool
	// Wait bounds how long close waits for live handoffs to be handed back
	// once their panes are closed.
	Wait time.Duration
	// reported: the report is printed; what failed is in it.
	reported bool
}

func closeCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "close",
		Usage:     "close every pane, tab and workspace herdr-pi opened for a workflow run",
		ArgsUsage: "<run>",
		Description: "Closes what herdr-pi opened in Herdr for the run (its id or a unique prefix): the\n" +
			"panes and tabs of its live handoffs and of its inspections (herdr-pi open, or the\n" +
			"owner's /workflow menu), and the run's workspace, each once. A live handoff whose\n" +
			"pane closes is handed back to its owner, which goes on locally; close waits for\n" +
			"that and for the handoff's tool bridge to close. A live handoff ordered whose pane\n" +
			"has not opened yet is given up: the attempt stays with its owner, no pane opens.\n" +
			"An inspection whose Pi has quit\n" +
			"is reported gone, untouched. What Herdr fails to close stays known: close again.\n" +
			"With nothing open, it exits 0 for a run the workflow store knows and 1 for a\n" +
			"run it does not (a typo is not success); 1 too when something could not be\n" +
			"closed, 2 for a mistake in the call (no run, two, an unknown flag).\n\n" +
			"Unlike open, close does not prefer your project's runs: a prefix must name one\n" +
			"run in the whole workflow store, so that it closes the same run's panes from\n" +
			"every directory.\n\n" +
			"Examples:\n" +
			"  herdr-pi close 3f0c\n" +
			"  herdr-pi close 3f0c9a2e --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print what was closed as JSON (format: docs/open.md)"},
		},
		Action: withArgs("close", func(c *cli.Context, args []string) error {
			opts := &closeOptions{JSON: c.Bool("json"), Wait: 30 * time.Second}
			err := closeAction(c.Context, f, opts, args)
			if opts.JSON && !opts.reported {
				err = closeFailedJSON(f, f.IO.Out, opts, err)
			}
			return err
		}),
	}
}

func closeAction(ctx context.Context, f *Factory, opts *closeOptions, args []string) error {
	if len(args) > 0 {
		// Known before the usage mistakes below: --json's answer to one
		// still names the run.
		opts.Run = args[0]
	}
	// A second word is named, as open names its third: "name one run"
	// alone leaves the person to guess which word was extra.
	if len(args) > 1 {
		return usagef("close", "unexpected argument %q (close takes one run; herdr-pi open --list shows them)", args[1])
	}
	if len(args) != 1 || args[0] == "" {
		return usagef("close", "name one run (herdr-pi open --list shows them)")
	}
	return closeRun(ctx, f, opts)
}

// closeFailedReport is what `close --json` prints when close fails before it
// has a report (docs/open.md): a script reading stdout learns why, as
// from open. The message goes to stderr too.
type closeFailedReport struct {
	Format string `json:"format"`
	// Run is the run named: its full id when the failure is a usage
	// mistake and the workflow store knows the run, else as it was named
	// (empty when none was). A run close looked up and could not find
	// stays as named: no id would be true of it.
	Run   string `json:"run"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func closeFailedJSON(f *Factory, w io.Writer, opts *closeOptions, err error) error {
	if err == nil {
		return nil
	}
	fail := closeFailedReport{Format: closeFormat, Run: opts.Run}
	if usage := (*usageError)(nil); errors.As(err, &usage) && opts.Run != "" && f != nil {
		// A usage mistake stops close before it looks the run up: looked
		// up here, the answer names the run as close's report would.
		if id, rerr := closeRunID(f, opts.Run); rerr == nil {
			fail.Run = id
		}
	}
	fail.Error.Code, fail.Error.Message = closeErrorCode(err), render.CleanLines(err.Error())
	if werr := render.JSON(w, fail); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// closeRunWord is the word of close's command line (its words after
// "close") that close takes for the run: the first that is not a flag, or
// the first after "--". For a line close could not read (an unknown
// flag), so that its failure still names the run. A flag close does not
// take, given without "=", may have the next word for its value (--bogus
// X): close cannot tell, so no word after it is the run.
func closeRunWord(words []string, flags []cli.Flag) string {
	for i, w := range words {
		if w == "--" {
			if i+1 < len(words) {
				return words[i+1]
			}
			return ""
		}
		if len(w) < 2 || w[0] != '-' {
			return w
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !hasValue && !slices.ContainsFunc(flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
			return ""
		}
	}
	return ""
}

// ambiguousCloseError is a prefix close refuses because it may name
// another run than the one with things open.
type ambiguousCloseError struct{ msg string }

func (e *ambiguousCloseError) Error() string { return e.msg }

// closeErrorCode names a close failure for scripts: open's codes, which
// close's failures share (docs/open.md).
func closeErrorCode(err error) string {
	var amb *ambiguousCloseError
	if errors.As(err, &amb) {
		return "ambiguous_run"
	}
	return openErrorCode(err)
}

type closeReport struct {
	Format string           `json:"format"`
	Run    string           `json:"run"`
	Closed []handoff.Closed `json:"closed"`
	// Failed is what close could not close, or cannot tell is closed:
	// always present, so that a script tells "nothing failed" by an
	// empty list rather than by a field it may not know.
	Failed []handoff.Failed `json:"failed"`
}

func closeRun(ctx context.Context, f *Factory, opts *closeOptions) error {
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	all, listErr := ledger.List()
	// Handoffs ordered whose panes have not opened yet: the run has
	// something under way even with nothing open, and its pane would open
	// after close said there was none.
	allPending, pendErr := ledger.Pendings()
	listErr = errors.Join(listErr, pendErr)
	var records []handoff.Record
	var pending []handoff.Pending
	var runs []string
	for _, r := range all {
		if strings.HasPrefix(r.Run, opts.Run) {
			records = append(records, r)
			if !slices.Contains(runs, r.Run) {
				runs = append(runs, r.Run)
			}
		}
	}
	for _, p := range allPending {
		if strings.HasPrefix(p.Run, opts.Run) {
			pending = append(pending, p)
			if !slices.Contains(runs, p.Run) {
				runs = append(runs, p.Run)
			}
		}
	}
	if len(runs) > 1 {
		// As open does with a prefix of several runs: an error, not usage.
		return &ambiguousCloseError{fmt.Sprintf("%q names several runs with open panes (%s): give more of the id", opts.Run, strings.Join(runs, ", "))}
	}
	rep := closeReport{Format: closeFormat, Run: opts.Run, Closed: []handoff.Closed{}, Failed: []handoff.Failed{}}
	if len(runs) == 0 {
		// Nothing is open for it. "Nothing to close" (exit 0) is only true
		// of a run that exists: a ref that names none (a typo, another
		// machine's id, a prefix of several) must not pass for success in
		// a script.
		id, err := closeRunID(f, opts.Run)
		if err != nil {
			if listErr != nil {
				tell(f.IO.Err, "herdr-pi close: %v\n", listErr)
			}
			return err
		}
		rep.Run = id
	}
	if len(runs) == 1 && opts.Run != runs[0] {
		// A prefix: it must name that run in the store too. A prefix of
		// several runs there, of any project (closeRunID), or of another
		// run is refused; a run the store no longer holds may still have
		// things open.
		id, err := closeRunID(f, opts.Run)
		var ambiguous *store.AmbiguousRunError
		switch {
		case errors.As(err, &ambiguous):
			return err
		case err == nil && id != runs[0]:
			return &ambiguousCloseError{fmt.Sprintf("%q names run %s in the workflow store, but run %s has things open: give more of the id", opts.Run, id, runs[0])}
		}
	}
	if len(runs) == 1 {
		rep.Run = runs[0]
		if len(pending) > 0 {
			// Given up first, so that none opens a pane after the listing
			// below; one placed meanwhile has its pane in the ledger by
			// the time it is over here, and is closed with the rest.
			given, failed := handoff.CancelPending(ctx, ledger, pending, opts.Wait)
			rep.Closed = append(rep.Closed, given...)
			rep.Failed = append(rep.Failed, failed...)
			if all, err := ledger.List(); err == nil {
				records = records[:0]
				for _, r := range all {
					if r.Run == runs[0] {
						records = append(records, r)
					}
				}
			}
		}
		closed, failed := handoff.CloseRun(ctx, ledger, func(socket string) handoff.Herdr { return herdr.NewClient(socket) }, records, opts.Wait)
		rep.Closed = append(rep.Closed, closed...)
		rep.Failed = append(rep.Failed, failed...)
	}
	rep.Failed = append(rep.Failed, unreadableFailures(listErr, rep.Run)...)
	if listErr != nil && len(rep.Failed) == 0 {
		// Only other runs' records are unreadable (or the ledger is):
		// worth saying, but this run's close went well.
		tell(f.IO.Err, "herdr-pi close: %v\n", listErr)
	}
	opts.reported = true
	if err := printClose(f, rep, opts.JSON); err != nil {
		return err
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("run %s: %w", rep.Run, &handoff.FailedError{Failed: rep.Failed})
	}
	return nil
}

// closeRunID is the run ref names in the workflow store, for close. Unlike
// open, close does not let the caller's project settle a prefix that
// starts run ids of other projects too: it refuses it as a prefix of
// several runs. open with such a prefix opens a read-only fork, or hands
// an attempt off and back, and says which run it took; close closes panes
// and hands live attempts back at once, cutting their turns, and a prefix
// that names another run from another directory (the one the person saw
// in another pane) must not do that. Refusing costs a few more characters,
// which the refusal names.
func closeRunID(f *Factory, ref string) (string, error) {
	id, passed, err := store.New(f.Paths().Home, f.IO.Dir).ResolveRunID(ref)
	if passed != nil {
		return "", passed.Ambiguous(closeRefusesPassedOver)
	}
	return id, err
}

// unreadableFailures are the unreadable ledger records that may have
// been run's: close cannot say that nothing of the run is open while one
// of them may name an open pane.
func unreadableFailures(listErr error, run string) []handoff.Failed {
	var ue *handoff.UnreadableRecordsError
	if !errors.As(listErr, &ue) {
		return nil
	}
	var out []handoff.Failed
	for _, u := range ue.Records {
		if u.MayBeOf(run) {
			out = append(out, handoff.Failed{Kind: "record", ID: u.File, Code: handoff.FailLedger, Why: "unreadable (" + u.Problem + "); " + u.Advice()})
		}
	}
	return out
}

func printClose(f *Factory, rep closeReport, asJSON bool) error {
	if asJSON {
		return render.JSON(f.IO.Out, rep)
	}
	if len(rep.Closed) == 0 && len(rep.Failed) == 0 {
		return say(f.IO.Out, "nothing herdr-pi opened for run %s is open\n", rep.Run)
	}
	for _, c := range rep.Closed {
		var err error
		switch c.How {
		case "closed":
			err = say(f.IO.Out, "closed %s %s\n", c.Kind, c.ID)
		case "gone":
			err = say(f.IO.Out, "%s %s was closed already\n", c.Kind, c.ID)
		case "removed":
			err = say(f.IO.Out, "removed the leftovers of %s %s (its wrapper is gone)\n", c.Kind, c.ID)
		case "given back":
			err = say(f.IO.Out, "gave up handoff %s before its pane opened: the attempt stays with its owner\n", c.ID)
		default:
			err = say(f.IO.Out, "closed %s %s %s\n", c.Kind, c.ID, c.How)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
