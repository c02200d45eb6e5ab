// Package notify turns what happened to the agent (a run finished or
// failed, it needs input or permission) into one notification on the
// channel that reaches the person: Herdr's notification.show inside Herdr,
// the OSC sequence the terminal understands outside it (tmux-wrapped when
// needed), and ntfy when configured. Every text is sanitised before it
// leaves.
//
// It owns which of the state machine's events are worth telling
// ([Triggers]), sanitising, channel choice, de-duplication, Herdr's pace
// (and the board on which the wrappers of one Herdr leave the questions it
// held back, so that the toast it shows names them: notify/board) and each
// channel's goroutine; it does not decide when the agent is blocked
// (pane/state does) and does not speak Herdr's socket protocol itself (the
// caller hands it a [Herdr], and a [Barrier] that says when the state
// reached Herdr). A failing channel never blocks the caller or another
// channel.
package notify
