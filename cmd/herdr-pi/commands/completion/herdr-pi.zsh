#compdef herdr-pi
# herdr-pi completion for zsh: source <(herdr-pi completion zsh)
_herdr_pi_complete() {
  local -a candidates
  local cur=${words[CURRENT]}
  local -a before=(${words[1,CURRENT-1]})
  candidates=(${(f)"$(${before[@]} "$cur" --generate-bash-completion 2>/dev/null)"})
  if (( ${#candidates} )); then
    compadd -- ${candidates[@]}
  else
    _files
  fi
}
compdef _herdr_pi_complete herdr-pi
