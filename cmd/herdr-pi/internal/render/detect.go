package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/herdr-pi/herdr-pi/pane/detect"
)

// contenders are the rules worth explaining: every rule that could have
// beaten the winner (priority at least the winner's), or all of them when
// nothing matched.
func contenders(ex detect.Explanation) []detect.RuleResult {
	var out []detect.RuleResult
	for _, r := range ex.Results {
		if ex.Rule != nil && (r.Rule == ex.Rule || r.Rule.Priority < ex.Rule.Priority) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// DetectText says how a screen was classified: the state, the rule that
// decided it and the rules that could have. The verdict is the command's
// whole result, so its write error is returned.
func DetectText(out io.Writer, m *detect.Manifest, ex detect.Explanation) error {
	var w strings.Builder
	fmt.Fprintf(&w, "state: %s\n", ex.State)
	if ex.Rule != nil {
		fmt.Fprintf(&w, "rule: %s (priority %d)\nregion: %s\n", ex.Rule.ID, ex.Rule.Priority, ex.Rule.Region)
		if ex.Skip {
			fmt.Fprintf(&w, "skip_state_update: the previous state is kept\n")
		}
	} else {
		fmt.Fprintf(&w, "rule: none (%s)\n", ex.Fallback)
	}
	fmt.Fprintf(&w, "manifest: %s (%s)\n", m.ID, m.Source)
	if others := contenders(ex); len(others) > 0 {
		fmt.Fprintf(&w, "other rules:\n")
		for _, r := range others {
			why := r.Why
			if r.Matched {
				why = "matched, but an earlier rule of the same priority wins"
			}
			fmt.Fprintf(&w, "  %s (%s, priority %d, %s): %s\n", r.Rule.ID, r.Rule.State, r.Rule.Priority, r.Rule.Region, why)
		}
	}
	// Ids and the manifest's path come from a file the person installed,
	// perhaps from elsewhere: cleaned whole, as tell cleans a message.
	_, err := io.WriteString(out, CleanLines(w.String()))
	return err
}

// DetectFormat names the shape of `detect --json` (docs/detect.md,
// docs/detect.schema.json). It changes only when a field's meaning
// changes.
const DetectFormat = "herdr-pi.detect/1"

type detectJSON struct {
	Format         string            `json:"format"`
	State          detect.State      `json:"state"`
	Rule           *string           `json:"rule"`
	Priority       *int64            `json:"priority"`
	Region         *string           `json:"region"`
	Fallback       string            `json:"fallback,omitempty"`
	Skip           bool              `json:"skip_state_update"`
	VisibleIdle    bool              `json:"visible_idle"`
	VisibleBlocker bool              `json:"visible_blocker"`
	VisibleWorking bool              `json:"visible_working"`
	Manifest       string            `json:"manifest"`
	Source         string            `json:"manifest_source"`
	Others         []detectRuleJSON  `json:"other_rules"`
	Screen         *detectScreenJSON `json:"screen,omitempty"`
}

type detectRuleJSON struct {
	ID       string       `json:"id"`
	State    detect.State `json:"state"`
	Priority int64        `json:"priority"`
	Region   string       `json:"region"`
	Matched  bool         `json:"matched"`
	Why      string       `json:"why,omitempty"`
}

type detectScreenJSON struct {
	Text     string `json:"text"`
	Title    string `json:"title"`
	Progress string `json:"progress"`
}

// DetectJSON is `detect --json` (docs/detect.md).
func DetectJSON(w io.Writer, m *detect.Manifest, ex detect.Explanation, in detect.Input, raw bool) error {
	out := detectJSON{
		Format: DetectFormat, State: ex.State, Fallback: ex.Fallback, Skip: ex.Skip,
		VisibleIdle: ex.VisibleIdle, VisibleBlocker: ex.VisibleBlocker, VisibleWorking: ex.VisibleWorking,
		Manifest: m.ID, Source: m.Source, Others: []detectRuleJSON{},
	}
	if ex.Rule != nil {
		id, region, prio := ex.Rule.ID, ex.Rule.Region.String(), ex.Rule.Priority
		out.Rule, out.Region, out.Priority = &id, &region, &prio
	}
	for _, r := range contenders(ex) {
		why := r.Why
		if r.Matched {
			why = "matched, but an earlier rule of the same priority wins"
		}
		out.Others = append(out.Others, detectRuleJSON{ID: r.Rule.ID, State: r.Rule.State, Priority: r.Rule.Priority,
			Region: r.Rule.Region.String(), Matched: r.Matched, Why: why})
	}
	if raw {
		out.Screen = &detectScreenJSON{Text: in.Text, Title: in.Title, Progress: in.Progress}
	}
	return JSON(w, out)
}
