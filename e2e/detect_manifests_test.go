package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/commands"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Screens built from the rules of every manifest Herdr ships, each with the
// verdict Herdr's engine gives it (herdr-detection-manifests.md), checked
// through `herdr-pi detect --manifest M --json`. rule "" means no rule
// matched (the known-agent idle fallback).
var herdrManifestCases = []struct {
	manifest, name        string
	text, title, progress string
	state, rule           string
}{
	{"amp", "title spinner", "", "⠋ Thinking - amp - proj", "", "working", "osc_title_working"},
	{"amp", "plugin confirmation title", "", "Plugin confirmation needed", "", "blocked", "osc_title_plugin_confirmation_blocked"},
	{"amp", "run this command", "Run this command?\n  ls -la", "", "", "blocked", "approval_footer"},
	{"amp", "approve with session scope", "Approve\n  Allow all for this session", "", "", "blocked", "approval_footer"},
	{"amp", "approve alone", "Approve the plan", "", "", "idle", ""},
	{"amp", "status footer", "output\n╰ opus thinking ─────────", "", "", "working", "status_footer_working"},
	{"amp", "idle title", "> ", "proj - amp - main", "", "idle", "osc_title_idle"},
	{"amp", "nothing", "hello", "", "", "idle", ""},

	{"antigravity", "permission", "Requesting permission for: rm x\nDo you want to proceed?", "", "", "blocked", "permission_prompt"},
	{"antigravity", "spinner", "  ⠋ Thinking about it", "", "", "working", "spinner_working"},
	{"antigravity", "unicode word boundary", "⠋ Thinkingü", "", "", "idle", ""},
	{"antigravity", "unicode letters", "⠙ Überprüfing läuft", "", "", "working", "spinner_working"},
	{"antigravity", "background tasks", "x\n· 2 tasks running", "", "", "working", "background_tasks_working"},

	{"claude", "title spinner", "", "⠐ Claude Code", "", "working", "osc_title_working"},
	{"claude", "transcript viewer", "… showing detailed transcript\nctrl+o to toggle", "", "", "unknown", "transcript_viewer"},
	{"claude", "edit form", "────────\n Do you want to make this edit?\n ❯ 1. Yes\n   2. No\n Esc to cancel · Enter to confirm", "", "", "blocked", "live_blocked_form"},
	{"claude", "prompt box", "reply\n────────\n❯ \n────────\n  ? for shortcuts", "", "", "idle", "live_prompt_box"},
	{"claude", "bash permission", "Bash command\n ls\nDo you want to proceed?\n❯ 1. Yes\n  2. No", "", "", "blocked", "bash_permission_prompt"},
	{"claude", "progress idle", "", "", "4;0;", "idle", "osc_progress_idle"},
	{"claude", "title before progress", "", "✳ Claude Code", "4;0;", "idle", "osc_title_idle"},
	{"claude", "legacy blocker", "Would you like to continue? yes", "", "", "blocked", "legacy_no_prompt_blocker"},
	{"claude", "legacy blocker, empty prompt", "Would you like to continue? yes\n ❯ ", "", "", "idle", ""},

	{"cline", "tool permission", "Let Cline use this tool?", "", "", "blocked", "tool_permission"},
	{"cline", "anything", "anything at all", "", "", "working", "default_cline_working"},
	// A blank screen as a capture gives it: one empty row (no bytes at all
	// is no capture, which detect refuses).
	{"cline", "empty screen", "\n", "", "", "idle", ""},

	{"codex", "action required", "", "Action Required - codex", "", "blocked", "osc_title_blocked"},
	{"codex", "title spinner", "", "⠋ codex", "", "working", "osc_title_working"},
	{"codex", "title idle", "", "codex", "", "idle", "osc_title_idle"},
	{"codex", "transcript", "› old\n↑/↓ to scroll · pgup/pgdn to page · home/end to jump · q to quit · esc to edit prev", "", "", "unknown", "transcript_viewer"},
	{"codex", "working line", "• Working (3s • esc to interrupt)", "", "", "working", "screen_working_fallback"},
	{"codex", "interrupted", "■ Conversation interrupted\n• Working (3s • esc to interrupt)", "", "", "idle", ""},
	{"codex", "allow command", "Allow command?\n[y/n]", "", "", "blocked", "live_strong_blocker"},
	{"codex", "y/n only", "Continue? [y/n]", "", "", "blocked", "weak_blocker"},

	{"cursor", "approval", "Run this command?\nwaiting for approval\n Run (once) (y)", "", "", "blocked", "approval_prompt"},
	{"cursor", "hexagon spinner", "  ⬢ Generating", "", "", "working", "spinner_working"},
	{"cursor", "stop hint", "ctrl+c to stop", "", "", "working", "stop_hint_working"},
	{"cursor", "background tasks", "2 background tasks", "", "", "working", "background_task_status_working"},

	{"devin", "trust", "Do you trust the authors of this directory?\nwith untrusted content.\nYes, trust this folder", "", "", "blocked", "workspace_trust_prompt"},
	{"devin", "running tools", "running tools · esc to interrupt", "", "", "working", "running_tools_footer"},
	{"devin", "welcome", "❭ Ask Devin to build features, fix bugs, and understand your code", "", "", "idle", "welcome_prompt_footer"},
	{"devin", "prompt", "❭ \ncontext: 12%", "", "", "idle", "live_prompt_footer"},

	{"droid", "spinner and stop", "⠋ Thinking\nesc to stop", "", "", "working", "spinner_stop_working"},
	{"droid", "stop hint", "esc to stop", "", "", "working", "stop_hint_working"},
	{"droid", "selection menu", "enter select · esc cancel · ↑↓ navigate", "", "", "blocked", "selection_menu_blocker"},

	{"gemini", "apply change", "│ Apply this change?", "", "", "blocked", "apply_or_allow_change"},
	{"gemini", "esc to cancel", "esc to cancel", "", "", "working", "esc_cancel_working"},
	{"gemini", "allow line", "❯ 1. Yes, allow once", "", "", "blocked", "apply_or_allow_change"},

	{"github-copilot", "selection", "Esc to cancel · Enter to select", "", "", "blocked", "selection_blocker"},
	{"github-copilot", "cancel hint", "esc to cancel", "", "", "working", "working_cancel_hint"},

	{"grok", "idle title", "", "grok", "", "idle", "osc_title_idle"},
	{"grok", "busy title", "", "⠋ grok thinking", "", "working", "osc_title_working"},
	{"grok", "progress busy", "", "", "4;1;-1", "working", "osc_progress_working"},
	{"grok", "progress over idle title", "", "my session - grok", "4;1;-1", "working", "osc_progress_working"},
	{"grok", "option dialog", "┃  2 (○) Yes, proceed", "", "", "blocked", "option_dialog_blocked"},
	{"grok", "background chip", "grok · 2 │ tasks\nrest", "", "", "working", "background_work_chip_working"},
	{"grok", "chip not on top", "rest\ngrok · 2 │ tasks", "", "", "idle", ""},

	{"hermes", "warning title", "", "⚠\ufe0f approval", "", "blocked", "osc_title_blocked"},
	{"hermes", "hourglass title", "", "⏳ working", "", "working", "osc_title_working"},
	{"hermes", "done title", "", "✓ done", "", "idle", "osc_title_idle"},
	{"hermes", "clarification", "Hermes needs your input\nEnter to confirm", "", "", "blocked", "clarification_prompt"},
	{"hermes", "interrupt", "ctrl+c to interrupt", "", "", "working", "interrupt_status_working"},

	{"kilo", "permission", "△ Permission required", "", "", "blocked", "opencode_permission"},
	{"kilo", "interrupt", "esc interrupt", "", "", "working", "esc_interrupt_working"},

	{"kimi", "moon", "🌕", "", "", "working", "moon_spinner_working"},
	{"kimi", "braille", "⠋ Thinking...", "", "", "working", "braille_spinner_working"},
	{"kimi", "question", "question\n? Which one\n↑↓ select · ↵ choose · esc cancel", "", "", "blocked", "question_panel"},

	{"kiro", "prompt", "Ask a question or describe a task · /copy to clipboard", "", "", "idle", "prompt_idle"},
	{"kiro", "working", "Kiro is working", "", "", "working", "kiro_working_marker"},
	{"kiro", "approval", "requires approval\nYes, single permission", "", "", "blocked", "tool_approval"},

	{"maki", "spinner bar", "output\n ⠋ [BUILD] model", "", "", "working", "status_bar_spinner_working"},
	{"maki", "idle bar", "output\n [PLAN] model", "", "", "idle", "status_bar_idle"},
	{"maki", "prompt chevron", "❯ \n────\n hint", "", "", "idle", "prompt_box_idle"},
	{"maki", "permission", "Permission required\ny allow · n deny", "", "", "blocked", "permission_prompt"},

	{"opencode", "permission", "△ Permission required", "", "", "blocked", "permission_required"},
	{"opencode", "interrupt", "esc to interrupt", "", "", "working", "interrupt_hint_working"},
	{"opencode", "progress bar", "■■■■⬝⬝⬝⬝", "", "", "working", "progress_bar_working"},

	{"pi", "0.73 row", " ⠋ Working...", "", "", "working", "working_literal"},
	{"pi", "1.6 border (missed upstream)", "── ⠴ Working ───", "", "", "idle", ""},

	{"qodercli", "confirmation", "Waiting for user confirmation\n yes / no", "", "", "blocked", "confirmation_or_input_blocker"},
	{"qodercli", "cancel hint", "(esc to cancel, 3s)", "", "", "working", "cancel_hint_working"},
	{"qodercli", "spinner", "⠋ Reading file", "", "", "working", "spinner_working"},
}

func TestDetectReproducesHerdrVerdicts(t *testing.T) {
	dir := testenv.Shared(t, "reference/herdr/manifests")
	files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	if len(files) == 0 {
		t.Fatalf("no Herdr manifests in %s", dir)
	}
	covered := map[string]bool{}
	tmp := t.TempDir()
	schema := docSchema(t, "detect")
	for i, c := range herdrManifestCases {
		covered[c.manifest] = true
		t.Run(c.manifest+"/"+c.name, func(t *testing.T) {
			screenFile := filepath.Join(tmp, fmt.Sprintf("screen%d.txt", i))
			if err := os.WriteFile(screenFile, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"herdr-pi", "detect", "--manifest", filepath.Join(dir, c.manifest+".toml"), "--json"}
			if c.title != "" {
				args = append(args, "--title", c.title)
			}
			if c.progress != "" {
				args = append(args, "--progress", c.progress)
			}
			args = append(args, screenFile)
			var out, errOut bytes.Buffer
			code := commands.Main(context.Background(), args, commands.IO{In: strings.NewReader(""), Out: &out, Err: &errOut,
				Env: []string{"HOME=" + tmp, "XDG_CONFIG_HOME=" + tmp}})
			if code != 0 {
				t.Fatalf("case %d: exit %d: %s", i, code, errOut.String())
			}
			validateJSON(t, schema, out.Bytes())
			var got struct {
				State  string  `json:"state"`
				Rule   *string `json:"rule"`
				Region *string `json:"region"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out.String())
			}
			rule := ""
			if got.Rule != nil {
				rule = *got.Rule
				if got.Region == nil || *got.Region == "" {
					t.Fatalf("a winning rule without its region:\n%s", out.String())
				}
			} else if got.Region != nil {
				t.Fatalf("a region without a rule:\n%s", out.String())
			}
			if got.State != c.state || rule != c.rule {
				t.Fatalf("got %s/%q, want %s/%q\n%s", got.State, rule, c.state, c.rule, out.String())
			}
		})
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".toml")
		if !covered[name] {
			t.Errorf("no cases for Herdr's %s manifest", name)
		}
	}
}
