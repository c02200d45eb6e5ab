# herdr-pi completion for fish: herdr-pi completion fish > ~/.config/fish/completions/herdr-pi.fish
function __herdr_pi_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l candidates ($words $cur --generate-bash-completion 2>/dev/null)
    if test (count $candidates) -gt 0
        printf '%s\n' $candidates
    else
        __fish_complete_path $cur
    end
end
complete -c herdr-pi -f -a '(__herdr_pi_complete)'
