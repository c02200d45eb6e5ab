# herdr-pi completion for bash: source <(herdr-pi completion bash)
_herdr_pi_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local candidates
  candidates=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -o bashdefault -o default -F _herdr_pi_complete herdr-pi
