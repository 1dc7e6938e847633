#!/usr/bin/env bash
# Register EdgeStudio with the Linux desktop for the current user: menu entry, the .onnx MIME type
# (application/x-onnx, *.onnx) opened by EdgeStudio on double-click, and the icons.
#
#   packaging/linux/install.sh [APP_DIR]      install (APP_DIR: the built dist/EdgeStudio folder)
#   packaging/linux/install.sh --uninstall    remove everything this script installed
#
# With APP_DIR the app is copied to ~/.local/lib/edgestudio and linked as ~/.local/bin/edgestudio;
# without it the desktop entry runs `edgestudio` from PATH (a pip install). Honours PREFIX
# (default ~/.local) and XDG_DATA_HOME. Uses xdg-mime / update-desktop-database /
# update-mime-database / gtk-update-icon-cache when present; without them the files are still
# put where the freedesktop specifications say desktops look.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX="${PREFIX:-$HOME/.local}"
DATA="${XDG_DATA_HOME:-$PREFIX/share}"
LIB="$PREFIX/lib/edgestudio"
BIN="$PREFIX/bin"
APPS="$DATA/applications"
MIME="$DATA/mime"
ICONS="$DATA/icons/hicolor"
SIZES="16 24 32 48 64 128 256 512"

have() { command -v "$1" >/dev/null 2>&1; }

refresh() {
    if have update-desktop-database; then update-desktop-database -q "$APPS" || true; fi
    if have update-mime-database; then update-mime-database "$MIME" >/dev/null || true; fi
    if have gtk-update-icon-cache; then gtk-update-icon-cache -q -t -f "$ICONS" || true; fi
}

uninstall() {
    rm -f "$APPS/edgestudio.desktop" "$MIME/packages/edgestudio-mime.xml" "$BIN/edgestudio"
    rm -f "$ICONS/scalable/apps/edgestudio.svg"
    for size in $SIZES; do rm -f "$ICONS/${size}x${size}/apps/edgestudio.png"; done
    rm -rf "$LIB"
    local list="${XDG_CONFIG_HOME:-$HOME/.config}/mimeapps.list"
    if [ -f "$list" ]; then sed -i '/^application\/x-onnx=edgestudio.desktop;$/d' "$list"; fi
    refresh
    echo "EdgeStudio removed from the desktop menu and file associations."
}

# What `xdg-mime default` does: make EdgeStudio the default for .onnx in mimeapps.list.
set_default_app() {
    local config="${XDG_CONFIG_HOME:-$HOME/.config}" list
    list="$config/mimeapps.list"
    mkdir -p "$config" && touch "$list"
    if grep -q '^application/x-onnx=' "$list"; then
        sed -i 's|^application/x-onnx=.*|application/x-onnx=edgestudio.desktop;|' "$list"
    elif grep -q '^\[Default Applications\]' "$list"; then
        sed -i '/^\[Default Applications\]/a application/x-onnx=edgestudio.desktop;' "$list"
    else
        printf '[Default Applications]\napplication/x-onnx=edgestudio.desktop;\n' >> "$list"
    fi
}

find_icons() {
    local app_dir="$1"
    for candidate in "$HERE/../../resources/icons" "$app_dir/_internal/edgestudio/resources/icons"; do
        if [ -f "$candidate/edgestudio.svg" ]; then (cd "$candidate" && pwd); return; fi
    done
    echo "install.sh: cannot find the icons (resources/icons)" >&2
    exit 1
}

install() {
    local app_dir="${1:-}" exec_cmd="edgestudio"
    if [ -n "$app_dir" ]; then
        if [ ! -x "$app_dir/EdgeStudio" ]; then
            echo "install.sh: $app_dir/EdgeStudio not found; build it with 'make package'" >&2
            exit 1
        fi
        app_dir="$(cd "$app_dir" && pwd)"
        if [ "$app_dir" != "$LIB" ]; then
            rm -rf "$LIB.new" && mkdir -p "$(dirname "$LIB")"
            cp -a "$app_dir" "$LIB.new"           # copy, then swap: never a half-installed app
            rm -rf "$LIB" && mv "$LIB.new" "$LIB"
        fi
        mkdir -p "$BIN" && ln -sfn "$LIB/EdgeStudio" "$BIN/edgestudio"
        exec_cmd="$LIB/EdgeStudio"
    fi
    local icons
    icons="$(find_icons "${app_dir:-$LIB}")"

    mkdir -p "$APPS" "$MIME/packages" "$ICONS/scalable/apps"
    sed "s|^Exec=edgestudio |Exec=\"$exec_cmd\" |" "$HERE/edgestudio.desktop" > "$APPS/edgestudio.desktop"
    cp "$icons/edgestudio.svg" "$ICONS/scalable/apps/edgestudio.svg"
    for size in $SIZES; do
        mkdir -p "$ICONS/${size}x${size}/apps"
        cp "$icons/png/edgestudio-$size.png" "$ICONS/${size}x${size}/apps/edgestudio.png"
    done
    if have xdg-mime; then
        XDG_DATA_HOME="$DATA" xdg-mime install --mode user --novendor "$HERE/edgestudio-mime.xml"
        XDG_DATA_HOME="$DATA" xdg-mime default edgestudio.desktop application/x-onnx
    else
        cp "$HERE/edgestudio-mime.xml" "$MIME/packages/edgestudio-mime.xml"
        set_default_app
    fi
    refresh
    echo "EdgeStudio is in the desktop menu and opens .onnx files (entry: $APPS/edgestudio.desktop)."
}

case "${1:-}" in
    --uninstall) uninstall ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) install "${1:-}" ;;
esac
