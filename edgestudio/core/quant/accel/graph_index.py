"""The indexes behind :mod:`.accelerator`'s stand-ins: name → initializer and tensor → nodes
lookups over an onnx graph, kept in step with every change made through them and checked on
every use, so that each answers as onnxruntime's own scan would (first occurrence, graph order)."""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import onnx

_TensorProto = onnx.TensorProto
_FLOAT8E4M3FN = onnx.TensorProto.FLOAT8E4M3FN


class Tracked:
    """Items of one protobuf repeated field (or long-lived list) in their original order, in
    step with it: appends are taken in incrementally, deletions made through us leave a
    tombstone (later items keep their original numbers, so graph order stays comparable), and
    any other change — an insertion, a removal behind our back, a cleared field — is caught by
    checking the first and last live items on every use, and starts the index again."""

    def __init__(self, container: Any) -> None:
        self.container = container  # held: a freed container's id could be reused
        self.items: list[Any] = []  # by original number; None once deleted
        self.deleted: list[int] = []  # original numbers deleted, sorted
        self.first_live = 0
        self.last_live = -1

    def live_position(self, number: int) -> int:
        """Where item ``number`` is in the container now."""
        return number - bisect.bisect_left(self.deleted, number)

    def sync(self) -> bool:
        """Take in appended items; False when the index had to start again."""
        container, items = self.container, self.items
        live = len(items) - len(self.deleted)
        n = len(container)
        fresh = True
        if n < live or (
            live
            and (
                container[live - 1] is not items[self.last_live]
                or container[0] is not items[self.first_live]
            )
        ):
            self.reset()
            live, fresh = 0, False
        for i in range(live, n):
            item = container[i]
            number = len(self.items)
            self.items.append(item)
            self.last_live = number
            if number == 0 or self.first_live >= number:
                self.first_live = number
            self.added(item, number)
        return fresh

    def delete(self, number: int) -> None:
        """Delete item ``number`` from the container and the index."""
        item = self.items[number]
        del self.container[self.live_position(number)]
        bisect.insort(self.deleted, number)
        self.items[number] = None
        while self.first_live < len(self.items) and self.items[self.first_live] is None:
            self.first_live += 1
        while self.last_live >= 0 and self.items[self.last_live] is None:
            self.last_live -= 1
        self.removed(item, number)

    def reset(self) -> None:
        """Forget every item (the container is read again on the next use)."""
        self.items.clear()
        self.deleted.clear()
        self.first_live, self.last_live = 0, -1

    def added(self, item: Any, number: int) -> None:
        """Index one item (subclasses)."""

    def removed(self, item: Any, number: int) -> None:
        """Forget one item (subclasses)."""


class NameIndex(Tracked):
    """Where each name stands in one repeated field (first occurrence first)."""

    def __init__(self, container: Any) -> None:
        super().__init__(container)
        self.numbers: dict[str, list[int]] = {}
        self.float8: dict[int, Any] = {}  # the only tensors ORT's _check_init looks into

    def reset(self) -> None:
        """Forget the names and the float8 tensors with the items."""
        super().reset()
        self.numbers.clear()
        self.float8.clear()

    def added(self, item: Any, number: int) -> None:
        """Index a new item by its name (and keep it when it is a float8 tensor)."""
        self.numbers.setdefault(item.name, []).append(number)
        # Only tensors have a data type (getattr's default would raise and catch per node).
        if type(item) is _TensorProto and item.data_type == _FLOAT8E4M3FN:
            self.float8[number] = item

    def removed(self, item: Any, number: int) -> None:
        """Drop a deleted item from the name index."""
        self.numbers[item.name].remove(number)
        self.float8.pop(number, None)

    def float8_items(self) -> list[Any]:
        """The FLOAT8E4M3FN tensors of the container, in order."""
        self.sync()
        return [self.float8[k] for k in sorted(self.float8)]

    def find(self, name: str) -> Any:
        """The first item called ``name`` in graph order (None: there is none), as ORT finds it."""
        self.sync()
        numbers = self.numbers.get(name)
        if not numbers:
            return None
        item = self.items[numbers[0]]
        if item.name != name:  # renamed in place: start again
            self.reset()
            return self.find(name)
        return item

    def remove_equal(self, wanted: Any) -> bool:
        """Delete the first item equal to ``wanted`` (as ``RepeatedField.remove`` does);
        False when there is none."""
        self.sync()
        for number in list(self.numbers.get(wanted.name, [])):
            item = self.items[number]
            if item is wanted or item == wanted:
                self.delete(number)
                return True
        return False


class Indexes:
    """Every index of one accelerated run (dropped when the run ends)."""

    def __init__(self, crosscheck: bool) -> None:
        self.crosscheck = crosscheck
        self.names: dict[int, NameIndex] = {}
        self.graphs: dict[int, NodeIndex] = {}

    def names_of(self, container: Any) -> NameIndex:
        """The name index of ``container``, made on first use."""
        index = self.names.get(id(container))
        if index is None or index.container is not container:
            index = self.names[id(container)] = NameIndex(container)
        return index

    def holding(self, node: Any) -> NodeIndex | None:
        """The fresh index of the graph that holds ``node`` (None: no indexed graph does)."""
        for index in self.graphs.values():
            number = index.number.get(id(node))
            if number is not None and index.items[number] is node:
                index.refresh()
                number = index.number.get(id(node))
                if number is not None and index.items[number] is node:
                    return index
        return None

    def nodes_of(self, graph: Any) -> NodeIndex:
        """The node index of ``graph``, made on first use."""
        nodes = graph.node
        index = self.graphs.get(id(nodes))
        if index is None or index.container is not nodes:
            index = self.graphs[id(nodes)] = NodeIndex(nodes)
        index.refresh()
        return index


class NodeIndex(Tracked):
    """Consumers and producers of every tensor of one graph, in graph order (with repeats where
    a node names a tensor twice, as onnxruntime's own maps have them)."""

    def __init__(self, nodes: Any) -> None:
        super().__init__(nodes)
        self.number: dict[int, int] = {}
        self.by_name: dict[str, list[int]] = {}
        self.consumers: dict[str, list[Any]] = {}
        self.producers: dict[str, list[Any]] = {}
        self.views: list[weakref.ref[MapView]] = []

    def changing(self) -> None:
        """Before any change: maps handed out earlier keep what they showed (ORT's are
        snapshots), by copying themselves now. Callers drop them at once, so this is rare."""
        for ref in self.views:
            view = ref()
            if view is not None:
                view.freeze()
        self.views.clear()

    def refresh(self) -> None:
        """Bring the index in step when the node list changed outside it."""
        if len(self.container) != len(self.items) - len(self.deleted):
            self.changing()
        self.sync()

    def reset(self) -> None:
        """Forget every node, its name, its inputs' consumers and outputs' producers."""
        self.changing()
        super().reset()
        self.number.clear()
        self.by_name.clear()
        self.consumers.clear()
        self.producers.clear()

    def added(self, node: Any, number: int) -> None:
        """Index a new node: its number, its name, its inputs and its outputs."""
        self.number[id(node)] = number
        self.by_name.setdefault(node.name, []).append(number)
        for name in node.input:
            if name:
                self.consumers.setdefault(name, []).append(node)
        for name in node.output:
            if name:
                self.producers.setdefault(name, []).append(node)

    def removed(self, node: Any, number: int) -> None:
        """Drop a deleted node from every table."""
        del self.number[id(node)]
        self.by_name[node.name].remove(number)
        for table, names in ((self.consumers, node.input), (self.producers, node.output)):
            for name in dict.fromkeys(names):
                if name and name in table:
                    table[name] = [n for n in table[name] if n is not node]

    def remove_equal(self, wanted: Any) -> bool:
        """Delete the first node equal to ``wanted`` (as ``RepeatedField.remove`` does)."""
        self.refresh()
        for number in list(self.by_name.get(wanted.name, [])):
            node = self.items[number]
            if node is wanted or node == wanted:
                self.changing()
                self.delete(number)
                return True
        return False

    def _key(self, node: Any) -> int:
        return self.number[id(node)]

    def move(
        self,
        table: dict[str, list[Any]],
        old: str,
        new: str,
        field: Callable[[Any], Any],
        only: Callable[[Any], bool] | None = None,
    ) -> None:
        """Rename ``old`` to ``new`` in ``field`` of every node listed under ``old`` (of those
        ``only`` accepts)."""
        if not table.get(old):
            return
        self.changing()
        nodes = table.pop(old)
        if only is not None:
            kept = [n for n in nodes if not only(n)]
            nodes = [n for n in nodes if only(n)]
            if kept:
                table[old] = kept
        seen: set[int] = set()
        moved: list[Any] = []
        for node in nodes:
            if id(node) in seen:
                continue
            seen.add(id(node))
            names = field(node)
            for j in range(len(names)):
                if names[j] == old:
                    names[j] = new
                    moved.append(node)
        if new:  # merged in graph order (a stable sort keeps a node's repeats together)
            table[new] = sorted([*table.get(new, []), *moved], key=self._key)


class MapView(Mapping[str, Any]):
    """ORT's ``input_name_to_nodes()``/``output_name_to_node()`` without building a new dict
    per call: a read-only view of the index that copies itself before the index changes."""

    def __init__(self, index: NodeIndex, table: dict[str, list[Any]], last: bool) -> None:
        self._table = table
        self._last = last
        self._frozen: dict[str, list[Any]] | None = None
        index.views.append(weakref.ref(self))

    def freeze(self) -> None:
        """Keep a copy of the map as it is now: the index is about to change."""
        self._frozen = {k: list(v) for k, v in self._table.items() if v}

    def _data(self) -> dict[str, list[Any]]:
        return self._frozen if self._frozen is not None else self._table

    def __getitem__(self, name: str) -> Any:
        nodes = self._data().get(name)
        if not nodes:
            raise KeyError(name)
        return nodes[-1] if self._last else list(nodes)

    def __iter__(self) -> Iterator[str]:
        return (k for k, v in list(self._data().items()) if v)

    def __len__(self) -> int:
        return sum(1 for v in self._data().values() if v)

    __hash__ = object.__hash__  # identity (Mapping would make views unhashable)
