"""The local engine runs the models of a chunk that need nothing of each other at the same time, on the CPU."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from extractors import Clip, Extractor, Section
from trace_eval.stage1.local import _run_beside_each_other, _stages


@dataclass
class _Config:
    pass


def _model(name: str, device: str = "cpu", depends_on: tuple[str, ...] = (), barrier=None, seen=None):
    class Model(Extractor):
        version = "1"
        batched = True
        uses_gpu = True
        Config = _Config

        def extract(self, clips: list[Clip]) -> list[Section]:
            if barrier is not None:
                barrier.wait(timeout=30)  # every model of the barrier must be running at once to get past it
            if seen is not None:
                seen.append((self.name, threading.current_thread().name))
            return [Section({self.name: clip.sha256}) for clip in clips]

    Model.name = name
    Model.depends_on = depends_on
    return Model(None, device)


def test_models_that_need_nothing_of_each_other_share_a_stage():
    asr, dnsmos, rate, later = _model("asr"), _model("dnsmos"), _model("rate", depends_on=("asr",)), _model("x")
    late = _model("late", depends_on=("rate",))
    assert [[e.name for e in stage] for stage in _stages([asr, dnsmos, rate, later, late])] == [
        ["asr", "dnsmos", "x"],
        ["rate"],
        ["late"],
    ]


def test_cpu_models_run_at_the_same_time_and_come_back_in_order():
    barrier = threading.Barrier(2)
    models = [_model("a", barrier=barrier), _model("b", barrier=barrier)]
    clips = [Clip("1" * 64, None), Clip("2" * 64, None)]
    outcomes = _run_beside_each_other(models, lambda ext: clips)
    assert [[result.values for _, result, _ in outcome] for outcome in outcomes] == [
        [{"a": "1" * 64}, {"a": "2" * 64}],
        [{"b": "1" * 64}, {"b": "2" * 64}],
    ]


def test_gpu_models_run_one_after_the_other_in_this_thread():
    seen: list[tuple[str, str]] = []
    models = [_model("a", "cuda:0", seen=seen), _model("b", "cuda:0", seen=seen), _model("c", seen=seen)]
    _run_beside_each_other(models, lambda ext: [Clip("1" * 64, None)])
    here = threading.current_thread().name
    assert [name for name, thread in seen if thread == here] == ["a", "b"]  # in order, here
    assert [name for name, thread in seen if thread != here] == ["c"]  # alone on the CPU: a thread of its own
