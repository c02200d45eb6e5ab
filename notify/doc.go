// Package notify sends notifications through the channel that reaches the
// person: Herdr's notification.show, OSC 9/99/777 (tmux-wrapped when
// needed), or ntfy. It sanitises every text before it reaches a terminal.
package notify
