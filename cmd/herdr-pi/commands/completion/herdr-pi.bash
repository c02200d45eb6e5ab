# herdr-pi completion for bash: source <(herdr-pi completion bash)
_herdr_pi_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]} glued=
  local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  # bash splits words at "=" and ":" (COMP_WORDBREAKS), so --title=x reaches
  # here as --title, =, x; herdr-pi must see it whole. COMP_LINE tells which
  # pieces were typed without a space between them. Written for bash 3.2.
  if [[ -n ${COMP_LINE-} ]]; then
    local rest=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}} w i n
    words=()
    for ((i = 0; i < COMP_CWORD; i++)); do
      w=${COMP_WORDS[i]}
      n=${#words[@]}
      if [[ $rest == [[:space:]]* || $n -eq 0 ]]; then
        rest=${rest#"${rest%%[![:space:]]*}"}
        words[n]=$w
      else
        words[n - 1]+=$w
      fi
      rest=${rest#"$w"}
    done
    # The word at the cursor glued to the one before it. After a flag
    # (--sound=re) it is a value herdr-pi does not complete: bash offers
    # file names. Else it is one word with a ":" in it (an agent's id,
    # 8d443e51-…:3#1), which herdr-pi completes whole; bash replaces only
    # what follows its last ":" (or "="), so the replies lose what comes
    # before.
    if [[ $COMP_CWORD -gt 0 && -n $rest && $rest != [[:space:]]* ]]; then
      n=${#words[@]}
      glued=${words[n - 1]}
      if [[ $glued == -* ]]; then
        COMPREPLY=()
        return
      fi
      unset 'words[n - 1]'
    fi
  fi
  local candidates
  candidates=$("${words[@]}" "$glued$cur" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "$candidates" -- "$glued$cur"))
  if [[ -n $glued ]]; then
    local word=$glued$cur j
    local kept=${word%"${word##*[:=]}"}
    for ((j = 0; j < ${#COMPREPLY[@]}; j++)); do
      COMPREPLY[j]=${COMPREPLY[j]#"$kept"}
    done
  fi
}
complete -o bashdefault -o default -F _herdr_pi_complete herdr-pi
