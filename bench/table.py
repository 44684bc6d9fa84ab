"""One benchmark row (groupkit's figure and each peer's) and the table of ratios they print as.

Every benchmark's ``measure()`` returns rows; ``bench/all.py`` (``make bench``) prints all of
them in one table. A ratio above 1x favours groupkit: groupkit's rate over the peer's, or the
peer's time, CPU or memory over groupkit's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PEERS = ("aiokafka", "confluent-kafka", "kafka-python")


@dataclass
class Row:
    name: str
    unit: str
    groupkit: float | None
    peers: dict[str, float | None] = field(default_factory=dict)
    higher_is_better: bool = True

    def ratio(self, peer: str) -> float | None:
        ours, theirs = self.groupkit, self.peers.get(peer)
        if not ours or not theirs:
            return None
        return ours / theirs if self.higher_is_better else theirs / ours


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}"


def render(rows: list[Row]) -> str:
    """Figures per client, then groupkit's ratio to each peer (and to its own pure Python)."""
    clients = list(dict.fromkeys(p for r in rows for p in r.peers))
    peers = [p for p in (*PEERS, "groupkit-py") if p in clients]
    others = [c for c in clients if c not in peers]
    head = ["row", "unit", "groupkit", *peers, *others, *(f"vs {p}" for p in peers)]
    lines = [head]
    for r in rows:
        cells = [r.name, r.unit, _figure(r.groupkit)]
        cells += [_figure(r.peers.get(c)) for c in (*peers, *others)]
        for p in peers:
            ratio = r.ratio(p)
            cells.append("-" if ratio is None else f"{ratio:.2f}x")
        lines.append(cells)
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = ["  ".join(cell.rjust(w) if i > 1 else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
            for row in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def print_rows(rows: list[Row]) -> None:
    print("ratios: groupkit's rate over the peer's, or the peer's time/CPU/RSS over groupkit's;"
          " above 1x favours groupkit")
    print(render(rows))
