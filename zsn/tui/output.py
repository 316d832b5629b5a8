"""What goes to the terminal: only the cells that changed, for a quiet SSH link.

Textual sends a partial update line by line, each changed span from the start of the
widget's piece of the line (its "chop") up to the span's end: a rate that changed at
column 60 of a table row sends columns 1 to 70 again, colours and all, and a row
whose rates tick every second costs most of the row every second. `CellUpdate` sends
each span from where it starts, as a terminal needs: the cells before it did not change;
and it sets colours as a terminal keeps them, changing only what differs from the
segment before (Textual resets and sets every attribute and both colours again for each
segment, three quarters of a quiet table's bytes), also from one span to the next; and
it sends the spans grouped by the style they start with, so a zebra table's changed rows
switch the background once for the even rows and once for the odd, not once a row.

Spans start where a widget asked for a repaint (`LiveTable` asks for a row's changed
cells, which start and end on cell boundaries); a span that started inside a
double-width character would have its left half replaced by a space, which is why
`tight` keeps Textual's own update for a line with such a character before the span.

What is rendered for it (`FrontCompositor`): Textual renders every widget under the
changed region, whole (the screen and each container around a table, every line of
each, through the app's colour filter), and then keeps, for each cell, the frontmost
widget's; it never blends one widget with another. Once a widget covers the whole
region, nothing behind it can show there: rendering stops at it. And the region is
one box around every change of the frame: a peer's rates in one table and its
interface's totals in another made one box over both, which only the screen covers.
The changes are rendered in groups instead, one for each widget that covers them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.color import Color, ColorSystem
from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor  # Textual 8's partial update
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class CellUpdate(ChopsUpdate):
    """Textual's partial update, each span sent from its own start."""

    def render_segments(self, console: Console) -> str:
        sequences: list[str] = []
        append = sequences.append
        pen = _Pen(console._color_system or ColorSystem.TRUECOLOR)
        # Every span begins with a move to where it starts, the shortest from where
        # the last one left the cursor (Textual also sends a line break after each
        # line, and so reset the colours there): the colours stay set from one span to
        # the next, and a row like the one before costs only what differs. Spans are
        # sent grouped by the style they start with, so the rows of a zebra table
        # change their background once a group, not once a row.
        groups: dict[Style | None, list[tuple[int, int, int, list[Segment]]]] = {}
        for y, x1, x2 in self.spans:
            line = self.chops[y]
            for end, (x, strip) in zip(self.chop_ends[y], line.items(), strict=False):
                if strip is None or x >= x2 or end <= x1:
                    continue
                start = max(x, x1) if _narrow_before(strip, x1 - x) else x
                cropped = strip.crop(start - x, min(end, x2) - x)
                segments = list(cropped)
                first = segments[0].style if segments else None
                groups.setdefault(first, []).append(
                    (start, start + cropped.cell_length, y, segments))
        cursor: tuple[int, int] | None = None  # where the terminal's cursor is, if known
        for spans in groups.values():
            for start, stop, y, segments in spans:
                append(_move(cursor, start, y))
                for text, style, _ in segments:
                    append(pen.write(text, style))
                # A write that reached the last column leaves the cursor waiting to
                # wrap, where terminals disagree on what a relative move does.
                cursor = (stop, y) if stop < self.chop_ends[y][-1] else None
        append(pen.write("", None))
        return "".join(sequences)


class FrontCompositor(Compositor):
    """Textual's compositor, which renders for a region only the widgets that show in it."""

    def render_partial_update(self) -> ChopsUpdate | None:
        screen = self.size.region
        regions = [region.intersection(screen) for region in self._dirty_regions]
        self._dirty_regions.clear()
        regions = [region for region in regions if region]
        if not regions:
            return None
        spans = list(self._regions_to_spans(regions))
        is_rendered_line = {y for y, _, _ in spans}.__contains__
        covers: list[Region] = []
        groups: list[list[Region]] = []
        for region in regions:
            for cover, group in zip(covers, groups, strict=True):
                if cover.contains_region(region):
                    group.append(region)
                    break
            else:
                covers.append(self._cover(region))
                groups.append([region])
        chops: Sequence[Mapping[int, Strip | None]]
        if len(groups) == 1:
            chops = self._render_chops(Region.from_union(groups[0]), is_rendered_line)
        else:
            # Each group's chops are right where they overlap its box (every widget in
            # front of the one that covers it was rendered); a change is only ever
            # written from the chops it overlaps.
            merged: list[dict[int, Strip | None]] = [
                dict.fromkeys(cut_set[:-1]) for cut_set in self.cuts]
            for group in groups:
                crop = Region.from_union(group)
                part = self._render_chops(crop, is_rendered_line)
                left, right = crop.x, crop.right
                for y in crop.line_range:
                    if not is_rendered_line(y):
                        continue
                    line = merged[y]
                    for (x, strip), end in zip(part[y].items(), self.cuts[y][1:],
                                               strict=False):
                        if strip is not None and x < right and end > left:
                            line[x] = strip
            chops = merged
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def _cover(self, region: Region) -> Region:
        """What the frontmost widget that holds all of `region` shows (the screen's
        region if none does)."""
        for widget_region, clip in self.visible_widgets.values():  # front to back
            shown = widget_region.intersection(clip)
            if shown.contains_region(region):
                return shown
        return self.size.region

    def _get_renders(self, crop: Region | None = None) -> Iterator[tuple[Region, Region,
                                                                          list[Strip]]]:
        renders = super()._get_renders(crop)  # front to back, each rendered when taken
        for render in renders:
            yield render
            region, clip, _ = render
            if crop and region.intersection(clip).contains_region(crop):
                return  # every cell of `crop` is this widget's or one in front of it


class FrontScreen(Screen[Any]):
    """A screen drawn by a `FrontCompositor`."""

    def __init__(self, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name, id, classes)
        self._compositor = FrontCompositor()


class _Pen:
    """Writes segments the way a terminal keeps its colours: from the style before."""

    def __init__(self, color_system: ColorSystem) -> None:
        self.color_system = color_system
        self.current: Style | None = None
        """The style the terminal has now (None: reset)."""

    def write(self, text: str, style: Style | None) -> str:
        if style is None or style.link or not Strip.render_ansi(style, self.color_system):
            reset = "\x1b[0m" if self.current is not None else ""
            self.current = None
            if style is None:
                return reset + text
            return reset + Strip.render_style(style, text, self.color_system)
        if style == self.current:
            return text
        current, self.current = self.current, style
        if current is not None and current.without_color == style.without_color:
            codes = []
            if current.color != style.color:
                codes += self._codes(style.color, foreground=True)
            if current.bgcolor != style.bgcolor:
                codes += self._codes(style.bgcolor, foreground=False)
            return (f"\x1b[{';'.join(codes)}m" if codes else "") + text
        reset = "\x1b[0m" if current is not None else ""
        return f"{reset}\x1b[{Strip.render_ansi(style, self.color_system)}m{text}"

    def _codes(self, color: Color | None, foreground: bool) -> list[str]:
        if color is None:
            return ["39" if foreground else "49"]
        return list(color.downgrade(self.color_system).get_ansi_codes(foreground))


def _move(cursor: tuple[int, int] | None, x: int, y: int) -> str:
    """The shortest sequence that takes the terminal's cursor from `cursor` (None:
    not known) to column `x` of line `y`, as curses picks one: the next span on the
    same line is a column move (``ESC [ 54 G`` or ``ESC [ 9 C``), not a move to a
    line and column (``ESC [ 12 ; 54 H``). No line feed: the terminal's output
    settings (ONLCR) can make it a carriage return too."""
    moves = [f"\x1b[{y + 1};{x + 1}H"]
    if cursor is not None:
        column, line = cursor
        if line == y:
            if column == x:
                return ""
            moves.append(f"\x1b[{x + 1}G")
            step = x - column
            moves.append(_step(step, "C") if step > 0 else "\b" * -step)
        elif column == x:
            moves.append(f"\x1b[{y + 1}d")
            step = y - line
            moves.append(_step(step, "B") if step > 0 else _step(-step, "A"))
    return min(moves, key=len)


def _step(count: int, direction: str) -> str:
    return f"\x1b[{direction}" if count == 1 else f"\x1b[{count}{direction}"


def _narrow_before(strip: Strip, cells: int) -> bool:
    """Whether the first `cells` cells of `strip` end on a character boundary (no
    double-width character straddles the cut)."""
    if cells <= 0:
        return True
    seen = 0
    for segment in strip:
        if segment.control:
            continue
        text = segment.text
        if text.isascii() and text.isprintable():  # a cell a character: no need to look
            seen += len(text)
            if seen >= cells:
                return True
            continue
        for character in text:
            if seen >= cells:
                return True
            seen += cell_len(character)
            if seen > cells:
                return False
    return True


def tight(update: RenderableType | None) -> RenderableType | None:
    """`update` as a `CellUpdate` when it is Textual's plain partial update."""
    if type(update) is ChopsUpdate:
        return CellUpdate(update.chops, update.spans, update.chop_ends)
    return update
