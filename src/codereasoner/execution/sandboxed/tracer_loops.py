"""The tracer's loop counting: which iteration of each enclosing loop a step belongs to.

Part of the sandbox-side tracer (see ``tracer``), imported as a flat module: standard library and
the tracer's accelerator and analysis modules only, no module-level side effects.
``LoopCounting`` is a base of ``tracer_frame.Frame``; the C fast path (``_tracecore``) calls its
methods by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the sandbox imports the same files as flat modules
    from codereasoner.execution.sandboxed.tracer_accelerator import FrameFields
    from codereasoner.execution.sandboxed.tracer_analysis import FOR, WHILE, CodeInfo
else:
    from tracer_accelerator import FrameFields
    from tracer_analysis import FOR, WHILE, CodeInfo


class LoopCounting(FrameFields):
    """Loop iteration counts of one frame (a base of ``_Frame``; the fields it uses below).

    ``counts`` maps each loop being run (a ``_Loop``, or the index of a comprehension's ``for``
    clause) to its iteration; ``rev_*`` hold a pending decision: whether the latest header check
    entered the body (the count stands) or left the loop (it is one too many).
    """

    __slots__ = ()

    info: CodeInfo
    recs: dict[int, tuple]
    off: int
    counts: dict[object, int]
    enc: tuple
    loops: tuple
    template: dict
    rev_loop: object
    rev_index: int
    rev_step: dict | None
    rev_more: list | None

    def count_loops(self, line: int, off: int, step: dict, enc: tuple) -> None:
        info = self.info
        if info.comp:
            self.comp_loops(off, step)
            return
        counts = self.counts
        target = info.fiter.get(off)
        if target is not None and enc is self.enc and enc[-1] is target:
            # The common case: the next iteration of the innermost `for` loop.
            counts[target] += 1
            loops = (*self.loops[:-1], (target.line, counts[target]))
            self.loops = step["loops"] = self.template["loops"] = loops
            self.rev_loop = target
            self.rev_index = len(enc) - 1
            self.rev_step = step
            self.rev_more = None
            return
        changed = enc is not self.enc
        if changed:
            for loop in [loop for loop in counts if loop not in enc]:
                del counts[loop]
            self.enc = enc
        rehit = None
        if enc:
            prev = self.recs[self.off][6] if self.off >= 0 else -1  # the previous line
            backward = off <= self.off
            claimed = False
            for loop in reversed(enc):
                count = counts.get(loop)
                if count is None:
                    counts[loop] = 1
                    changed = True
                    continue
                if claimed:
                    continue
                kind = loop.kind
                in_head = loop.head_lo <= line <= loop.head_hi
                if kind == FOR:
                    target = info.fiter.get(off)
                    if target is loop or (
                        target is None
                        and loop not in info.fiter_loops  # `async for`: no FOR_ITER to key
                        and in_head
                        and loop.body_lo <= prev <= loop.body_hi
                        and not loop.head_lo <= prev <= loop.head_hi
                    ):
                        counts[loop] = count + 1
                        claimed = True
                        rehit = loop
                    elif in_head and target is None and backward:
                        counts[loop] = 1  # entered anew by an enclosing loop
                        changed = True
                elif kind == WHILE:
                    if not in_head:
                        continue
                    prev_in_head = loop.head_lo <= prev <= loop.head_hi
                    if loop.body_lo <= prev <= loop.body_hi and not prev_in_head:
                        counts[loop] = count + 1
                        claimed = True
                        rehit = loop
                    elif loop.inline and backward:
                        counts[loop] = count + 1
                        claimed = True
                    elif prev_in_head and backward:
                        counts[loop] = 1
                        changed = True
                elif (
                    loop.body_lo <= prev <= loop.body_hi
                    and not (loop.head_lo <= prev <= loop.head_hi)
                    and (in_head or (line == loop.body_lo and backward))
                ):
                    # `while True`: back at the header, or at the top of the body when the
                    # compiler dropped the header from the loop.
                    counts[loop] = count + 1
                    claimed = True
            if claimed:
                changed = True
        if changed:
            self.loops = self.template["loops"] = tuple([(loop.line, counts[loop]) for loop in enc])
            step["loops"] = self.loops
        if rehit is not None and not (rehit.kind == WHILE and rehit.inline):
            self.rev_loop = rehit
            self.rev_index = enc.index(rehit)
            self.rev_step = step
            self.rev_more = None
        elif self.rev_loop is not None:
            # A continuation line of a multi-line header: it shares the pending decision.
            if self.rev_more is None:
                self.rev_more = []
            self.rev_more.append(step)

    def resolve_rev(self, line: int | None, off: int | None) -> None:
        """Decide whether the last header check entered the loop body or left the loop."""
        loop = self.rev_loop
        index = self.rev_index
        if line is not None:
            if self.info.comp:
                target = self.info.clause.get(off)  # type: ignore[arg-type]
                if target is None or target >= index:
                    self.rev_loop = None
                    return
            else:
                if loop.body_lo <= line <= loop.body_hi:  # type: ignore[attr-defined]
                    self.rev_loop = None
                    return
                if loop.head_lo <= line <= loop.head_hi:  # type: ignore[attr-defined]
                    return  # still in a multi-line header
        self.rev_loop = None
        steps = [self.rev_step] + (self.rev_more or [])
        for step in steps:
            old = step["loops"]
            if index < len(old):
                step["loops"] = (*old[:index], (old[index][0], max(1, old[index][1] - 1)))

    def comp_loops(self, off: int, step: dict) -> None:
        info = self.info
        counts = self.counts
        index = info.clause.get(off)
        lines = info.loop_lines
        if not counts:
            for position in range(len(lines)):
                counts[position] = 1
            self.loops = self.template["loops"] = tuple([(line, 1) for line in lines])
        elif index is not None:
            counts[index] += 1
            if len(lines) == 1:  # one `for` clause: the common case
                self.loops = self.template["loops"] = ((lines[0], counts[0]),)
            else:
                for inner in range(index + 1, len(lines)):
                    counts[inner] = 1
                self.loops = self.template["loops"] = tuple(
                    [(line, counts[position]) for position, line in enumerate(lines)]
                )
            self.rev_loop = index
            self.rev_index = index
            self.rev_step = step
            self.rev_more = None
        step["loops"] = self.loops
