"""`python -m trace_eval show AUDIO --prosody`: how the words of one stored blueprint were said, readably."""

from __future__ import annotations

from llm_server import PairSpec, blueprint, prosody_section, write_benchmark

from trace_eval.cli import main

TEXT = "Is it raining, or is it snowing?"


def test_show_prints_each_words_prominence_and_a_line_per_phrase(tmp_path, capsys):
    said = prosody_section(TEXT, {"raining,": 1.9}, ending_st=4.1, paused_after=(2,))
    unmeasured = blueprint(TEXT, prosody=None)
    unmeasured["agent_prosody"] = None
    record = {"name": "prosody", "version": "1", "fingerprint": "f", "status": "ok"}
    unmeasured["provenance"] = {"extractors": {"prosody": {**record, "null_reasons": {"agent_prosody": "no words"}}}}
    root = write_benchmark(
        tmp_path / "bench", [PairSpec("a", response_1=blueprint(TEXT, prosody=said), response_2=unmeasured)]
    )
    assert main(["show", str(root / "audio" / "a_audio1.wav"), "--prosody"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "speaker's median pitch 150 Hz"
    assert out[3] == "  it                 0.55  -0.30"
    assert out[4] == "  raining,           0.90   1.90 ████████ *"  # a bar as long as it stands out, * prominent
    assert out[-3:] == [
        "phrase 1 “Is it *raining*,” rising +4.1 st; pause 0.40 s after “raining”",
        "phrase 2 “or is it snowing?” rising +4.1 st",
        "last third against the first: loudness steady (+0.5 dB), pitch steady (-0.4 st), pace steady (1.00x)",
    ]
    assert main(["show", str(root / "audio" / "a_audio2.wav"), "--prosody"]) == 0
    assert capsys.readouterr().out.strip().endswith("a_audio2.wav: no words")
