#!/usr/bin/env bash
# Every relative link of grove's Markdown (README.md, docs/**, the module
# READMEs: every *.md of the source tree outside build folders) points at a
# file or folder that exists, and a link with #anchor into a Markdown file
# at one of its headings (GitHub's anchors: lower case, punctuation other
# than - and _ dropped, spaces as -). Links to http(s):, mailto: and
# same-page anchors' pages are not fetched; same-page anchors are checked.
# Before the tree, the checker runs on a small tree of its own with one
# good link, one missing file and one missing anchor, and must find
# exactly the two.
#   test_docs_links.sh SOURCE_DIR
set -u
root=${1:?usage: test_docs_links.sh SOURCE_DIR}
export LC_ALL=C.UTF-8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# slugs FILE: the anchors of FILE's headings, one a line
slugs() {
    grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//; s/ +#* *$//' |
        tr '[:upper:]' '[:lower:]' | sed -E 's/[^[:alnum:] _-]//g; s/ /-/g'
}

# check_tree DIR: prints "FILE: broken link TARGET" for each broken link,
# then "N files, M links, K broken" as the last line.
check_tree() {
    local dir=$1 files=0 links=0 broken=0 f target path anchor
    while IFS= read -r f; do
        files=$((files + 1))
        # [text](target) and [text](target "title"); code spans and blocks
        # hold no such pattern in grove's pages
        while IFS= read -r target; do
            target=${target#](}
            target=${target%)}
            target=${target%% *}
            case $target in
                http://* | https://* | mailto:* | "") continue ;;
            esac
            links=$((links + 1))
            path=${target%%#*}
            anchor=
            [ "$path" != "$target" ] && anchor=${target#*#}
            if [ -z "$path" ]; then
                path=$f
            else
                path=${f%/*}/$path
            fi
            if [ ! -e "$path" ]; then
                echo "${f#"$dir"/}: broken link $target (no ${path#"$dir"/})"
                broken=$((broken + 1))
            elif [ -n "$anchor" ] && [ -f "$path" ] && [ "${path%.md}" != "$path" ] &&
                ! slugs "$path" | grep -qxF -- "$anchor"; then
                echo "${f#"$dir"/}: broken link $target (no heading #$anchor in ${path#"$dir"/})"
                broken=$((broken + 1))
            fi
        done < <(grep -oE '\]\([^)[:space:]]+( "[^"]*")?\)' "$f")
    done < <(find "$dir" -name '*.md' -not -path "$dir/build*" -not -path "$dir/.git/*" | sort)
    echo "$files files, $links links, $broken broken"
}

# the checker on a tree of its own
mkdir -p "$tmp/t/docs"
printf '# Top\n\n## A heading, with `code` (and more)\n' >"$tmp/t/docs/page.md"
printf '%s\n' '[ok](docs/page.md#a-heading-with-code-and-more) [ok too](docs/)' \
    '[gone](docs/none.md) [bad anchor](docs/page.md#nowhere) [web](https://x.org/y)' >"$tmp/t/README.md"
self=$(check_tree "$tmp/t")
if [ "$(printf '%s\n' "$self" | tail -1)" != "2 files, 4 links, 2 broken" ] ||
    ! grep -q 'broken link docs/none.md' <<<"$self" ||
    ! grep -q 'no heading #nowhere' <<<"$self"; then
    echo "FAIL: the link checker on its own tree:"
    echo "$self"
    exit 1
fi

out=$(check_tree "$root")
echo "$out"
case $(printf '%s\n' "$out" | tail -1) in
    *" 0 broken") ;;
    *) echo "FAIL: broken links above"; exit 1 ;;
esac
