package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/settings"
)

// herdrChecks is the doctor's Herdr section: the pane environment, the
// socket, the protocol, the pane, and what can be known about toasts.
func herdrChecks(ctx context.Context, d Input) []Row {
	row := func(name, status, detail, fix string) Row {
		return Row{Section: "herdr", Name: name, Status: status, Detail: detail, Fix: fix}
	}
	env := d.Env
	h, complete := settings.HerdrEnv(env)
	var rows []Row
	switch {
	case complete:
		rows = append(rows, row("environment", OK,
			fmt.Sprintf("inside Herdr pane %s (HERDR_ENV=1, HERDR_SOCKET_PATH and HERDR_PANE_ID set)", h.PaneID), ""))
	case env.Get("HERDR_ENV") == "" && h.SocketPath == "" && h.PaneID == "":
		return append(rows, row("environment", Warn,
			"not inside a Herdr pane (HERDR_ENV, HERDR_SOCKET_PATH and HERDR_PANE_ID are unset): wrap runs the agent but reports nothing to Herdr",
			"run herdr-pi in a Herdr pane to have its state shown there"))
	default:
		rows = append(rows, row("environment", Fail,
			"incomplete Herdr environment, missing "+strings.Join(settings.MissingHerdr(env), ", ")+": herdr-pi sends nothing to Herdr",
			"open a new Herdr pane (Herdr sets all three), or unset the HERDR_* variables outside Herdr"))
		if h.SocketPath == "" {
			return rows
		}
	}

	sock := h.SocketPath
	fi, err := os.Stat(sock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return append(rows, row("socket", Fail,
			fmt.Sprintf("HERDR_SOCKET_PATH=%s does not exist: Herdr is not running, or the variable is left over from an old session", sock),
			"start Herdr, or open a new pane so the variable is current"))
	case err != nil:
		return append(rows, row("socket", Fail, fmt.Sprintf("HERDR_SOCKET_PATH=%s: %v", sock, err),
			"check the path and its permissions"))
	case fi.Mode()&fs.ModeSocket == 0:
		return append(rows, row("socket", Fail,
			fmt.Sprintf("HERDR_SOCKET_PATH=%s is a %s, not a socket", sock, kindOfFile(fi)),
			"open a new Herdr pane, or point HERDR_SOCKET_PATH at Herdr's socket"))
	}
	client := herdr.NewClient(sock)
	pong, err := client.Ping(ctx)
	var pm *herdr.ProtocolMismatchError
	if err != nil && !errors.As(err, &pm) {
		return append(rows, row("socket", Fail, herdr.Detail(err), socketFix(err)))
	}
	sockDetail := sock + " answers ping"
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		rows = append(rows, row("socket", Warn,
			fmt.Sprintf("%s answers ping, but its mode is %#o: other users can drive this Herdr (Herdr makes it 0600)", sock, perm),
			"chmod 600 "+shellword.Word(sock)))
	} else {
		rows = append(rows, row("socket", OK, sockDetail, ""))
	}

	handoff := "no"
	if pong.Capabilities != nil && pong.Capabilities.LiveHandoff {
		handoff = "yes"
	}
	version := herdr.Shown(pong.Version)
	if pm == nil {
		rows = append(rows, row("protocol", OK,
			fmt.Sprintf("Herdr %s speaks protocol %d, the one herdr-pi is built for (live handoff: %s)", version, pong.Protocol, handoff), ""))
	} else if pm.Got > pm.Expected {
		rows = append(rows, row("protocol", Warn,
			fmt.Sprintf("Herdr %s speaks protocol %d, newer than the %d herdr-pi is built for: herdr-pi only uses pane.report_agent, pane.release_agent, pane.get and notification.show, which may have changed", version, pm.Got, pm.Expected),
			"upgrade herdr-pi if states or toasts misbehave"))
	} else {
		rows = append(rows, row("protocol", Warn,
			fmt.Sprintf("Herdr %s speaks protocol %d, older than the %d herdr-pi is built for: methods herdr-pi relies on may be missing", version, pm.Got, pm.Expected),
			"upgrade Herdr"))
	}

	if h.PaneID != "" {
		pane, err := client.PaneGet(ctx, h.PaneID)
		var he *herdr.Error
		switch {
		case errors.As(err, &he) && he.Code == "pane_not_found":
			rows = append(rows, row("pane", Fail,
				fmt.Sprintf("Herdr at %s has no pane %s (HERDR_PANE_ID): the pane was closed, or this shell came from another Herdr session", sock, h.PaneID),
				"open a new Herdr pane and run herdr-pi there"))
		case err != nil:
			rows = append(rows, row("pane", Fail, herdr.Detail(err), socketFix(err)))
		default:
			who := "no agent"
			if pane.Agent != "" {
				who = "agent " + herdr.Shown(pane.Agent)
			}
			rows = append(rows, row("pane", OK,
				fmt.Sprintf("Herdr knows pane %s in tab %s (%s, status %s)", herdr.Shown(pane.PaneID), herdr.Shown(pane.TabID), who, herdr.Shown(pane.AgentStatus)), ""))
		}
	}
	return append(rows, toastRow(env, row))
}

// toastRow says what can be known about Herdr's toasts. notification.show
// has no dry run (herdr-socket-api.md §4.6), so the only thing to read is
// Herdr's [ui.toast] delivery setting, off by default (§10).
func toastRow(env settings.Env, row func(name, status, detail, fix string) Row) Row {
	const noProbe = "; whether a given toast shows also depends on focus and Herdr's 1 s rate limit, which only sending one can tell (notification.show has no dry run)"
	path, shown := herdrConfigPath(env)
	// Read as every settings file is (settings.ReadFile): a FIFO there
	// would hang doctor past its budget and its Ctrl-C, /dev/zero fill
	// its memory.
	var data []byte
	var err error
	named := env.Get("HERDR_CONFIG_PATH") != ""
	if named {
		data, err = settings.ReadNamedFile(path, settings.TOML, "point HERDR_CONFIG_PATH at Herdr's config file, or unset it")
	} else {
		data, err = settings.ReadFile(path, settings.TOML)
	}
	var fe *settings.FileError
	var delivery *string
	var mistake string
	if err == nil {
		delivery, mistake = toastDelivery(data, shown)
	}
	switch {
	case errors.As(err, &fe) && !errors.Is(err, fs.ErrNotExist):
		fix := "make it a regular file of at most 1 MiB; herdr-pi only reads [ui.toast] delivery from it"
		if named {
			fix = "point HERDR_CONFIG_PATH at Herdr's config file (the one Herdr reads), or unset it"
		}
		return row("toasts", Warn, fmt.Sprintf("cannot read Herdr's config %s: %s", shown, fe.Reason), fix)
	case errors.Is(err, fs.ErrNotExist):
		return row("toasts", Warn,
			fmt.Sprintf("Herdr shows no toasts by default ([ui.toast] delivery = \"off\", and %s does not exist): herdr-pi's notifications inside Herdr come back \"disabled\"", shown),
			fmt.Sprintf("add [ui.toast] delivery = \"herdr\" (or \"terminal\", \"system\") to %s and run 'herdr server reload-config'", shown))
	case err != nil:
		return row("toasts", Warn, fmt.Sprintf("cannot read Herdr's config %s: %v", shown, err),
			"fix the file; herdr-pi only reads [ui.toast] delivery from it")
	case mistake != "":
		return row("toasts", Warn, mistake,
			fmt.Sprintf("fix the mistake in %s; herdr-pi only reads [ui.toast] delivery from it", shown))
	}
	d := "off"
	if delivery != nil {
		d = *delivery
	}
	switch d {
	case "herdr", "terminal", "system":
		return row("toasts", OK, fmt.Sprintf("Herdr delivers toasts to %s ([ui.toast] delivery = %q in %s)%s", deliveryWhere(d), d, shown, noProbe), "")
	case "off":
		return row("toasts", Warn,
			fmt.Sprintf("Herdr's toasts are off ([ui.toast] delivery is \"off\" in %s): herdr-pi's notifications inside Herdr come back \"disabled\"", shown),
			fmt.Sprintf("set [ui.toast] delivery = \"herdr\" (or \"terminal\", \"system\") in %s and run 'herdr server reload-config'", shown))
	}
	return row("toasts", Warn, fmt.Sprintf("[ui.toast] delivery = %s in %s is not one Herdr knows (off, herdr, terminal, system)", settings.QuoteClipped(d, 40), shown),
		"set it to \"herdr\", \"terminal\" or \"system\"")
}

// toastDelivery reads [ui.toast] delivery from Herdr's config text (nil
// when unset), or says what is wrong with the file in its own terms, on
// its line: the TOML decoder's words for a table where a string stands
// are Go's ("type mismatch for struct { Delivery *string … }").
func toastDelivery(data []byte, shown string) (delivery *string, mistake string) {
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Sprintf("cannot read Herdr's config %s:%d: %s", shown, settings.TOMLParseLine(data, pe), settings.TOMLParseMessage(data, pe))
		}
		return nil, fmt.Sprintf("cannot read Herdr's config %s: %s", shown, strings.TrimPrefix(err.Error(), "toml: "))
	}
	at := func(key ...string) string { return fmt.Sprintf("%s:%d", shown, settings.LineOf(data, key...)) }
	ui, ok := top["ui"]
	if !ok {
		return nil, ""
	}
	uiTable, ok := ui.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("%s: ui must be a table, not %s", at("ui"), settings.TOMLKind(ui))
	}
	toast, ok := uiTable["toast"]
	if !ok {
		return nil, ""
	}
	toastTable, ok := toast.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("%s: [ui] toast must be a table, not %s", at("ui", "toast"), settings.TOMLKind(toast))
	}
	d, ok := toastTable["delivery"]
	if !ok {
		return nil, ""
	}
	text, ok := d.(string)
	if !ok {
		return nil, fmt.Sprintf("%s: [ui.toast] delivery = %s must be a string: \"off\", \"herdr\", \"terminal\" or \"system\"", at("ui", "toast", "delivery"), shortTOML(d))
	}
	return &text, ""
}

// shortTOML is a decoded TOML value as a message quotes it: itself when
// short and on one line (delivery = 1), else its kind (an array of a
// hundred thousand numbers is "an array"): Herdr's config may be a MiB.
func shortTOML(v any) string {
	if s := fmt.Sprint(v); len(s) <= 40 && !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return settings.TOMLKind(v)
}

func deliveryWhere(d string) string {
	switch d {
	case "herdr":
		return "its own window"
	case "terminal":
		return "the outer terminal"
	}
	return "the system notifier"
}

// herdrConfigPath finds Herdr's config.toml the way Herdr does
// (herdr-socket-api.md §1.1, §10): HERDR_CONFIG_PATH, else
// $XDG_CONFIG_HOME/herdr, else ~/.config/herdr. It returns the path and
// how to show it.
func herdrConfigPath(env settings.Env) (path, shown string) {
	paths := settings.Resolve(env)
	if p := env.Get("HERDR_CONFIG_PATH"); p != "" {
		return p, paths.Pretty(p)
	}
	dir := filepath.Join(paths.Home, ".config")
	if x := env.Get("XDG_CONFIG_HOME"); x != "" {
		dir = x
	}
	p := filepath.Join(dir, "herdr", "config.toml")
	return p, paths.Pretty(p)
}

func socketFix(err error) string {
	switch herdr.KindOf(err) {
	case herdr.FailNoSocket, herdr.FailRefused:
		return "start Herdr, or open a new pane so HERDR_SOCKET_PATH is current"
	case herdr.FailPermission:
		return "run herdr-pi as the user who runs Herdr"
	case herdr.FailNotSocket, herdr.FailTooLong:
		return "open a new Herdr pane, or point HERDR_SOCKET_PATH at Herdr's socket"
	case herdr.FailForeign:
		return "HERDR_SOCKET_PATH names another user's socket: open a new pane of your own Herdr, or unset it outside Herdr"
	case herdr.FailTimeout:
		return "Herdr is busy or hung: wait and run doctor again, or restart Herdr"
	case herdr.FailGarbage, herdr.FailClosed:
		return "make sure HERDR_SOCKET_PATH is Herdr's API socket (not herdr-client.sock or another program's)"
	}
	return "run doctor again; restart Herdr if it persists"
}

func kindOfFile(fi fs.FileInfo) string {
	switch {
	case fi.IsDir():
		return "directory"
	case fi.Mode().IsRegular():
		return "regular file"
	}
	return "special file"
}
