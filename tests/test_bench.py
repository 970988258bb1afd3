import json

import numpy as np
import pytest
import soundfile as sf

from trace_eval.bench import ManifestError, load_benchmark
from trace_eval.rubrics.labels import label_space


def _wav(path, seconds=0.5, sr=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, 0.1 * np.sin(2 * np.pi * 220 * t), sr)


@pytest.fixture
def folder(tmp_path):
    for name in ("q", "a", "b"):
        _wav(tmp_path / "audio" / f"{name}.wav")
    return tmp_path


def hcot_item(index, **extra):
    """An item shaped like the released SpeakBench / S2S-Arena HCoT annotation files."""
    item = {
        "index": index,
        "instruction_path": "audio/q.wav",
        "instruction_text": "Say hello slowly.",
        "audio1_path": "audio/a.wav",
        "audio2_path": "audio/b.wav",
        "model_a": "gpt4o",
        "model_b": "moshi",
        "label": {"content": "both_good", "voice_quality": "1", "paralinguistics": "2", "overall": "2"},
        "hcot": {"content": "Both answers say hello.", "paralinguistics": "B is slower."},
    }
    item.update(extra)
    return item


def test_json_list_loads_unchanged_with_extra_fields(folder):
    (folder / "manifest.json").write_text(json.dumps([hcot_item(0), hcot_item(1, context="a quiz")]))
    bench = load_benchmark(folder)
    assert [p.id for p in bench] == ["0", "1"]
    pair = bench.pairs[1]
    assert pair.label == {"content": "both_good", "voice_quality": "1", "paralinguistics": "2", "overall": "2"}
    assert pair.extra["context"] == "a quiz" and "hcot" in pair.extra
    assert bench.audio_files() == ["audio/q.wav", "audio/a.wav", "audio/b.wav"]


def test_jsonl_with_id_field(folder):
    items = [hcot_item(0) for _ in range(3)]
    for i, item in enumerate(items):
        del item["index"]
        item["id"] = f"x{i}"
    lines = [json.dumps(item) for item in items]
    (folder / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    assert [p.id for p in load_benchmark(folder)] == ["x0", "x1", "x2"]


def test_every_problem_is_reported_at_once(folder):
    items = [
        hcot_item("dup"),
        hcot_item("dup"),
        hcot_item("bad-label", label={"overall": "tie"}),
        hcot_item("gone", audio2_path="audio/missing.wav"),
        {"instruction_path": "audio/q.wav", "audio1_path": "audio/a.wav", "audio2_path": "audio/b.wav"},
    ]
    (folder / "manifest.json").write_text(json.dumps(items))
    with pytest.raises(ManifestError) as err:
        load_benchmark(folder)
    text = "\n".join(err.value.problems)
    assert "item dup: duplicate id" in text
    assert "item bad-label: label.overall = 'tie'" in text
    assert "item gone: audio2_path audio/missing.wav does not exist" in text
    assert "item 4:" in text  # no id at all
    assert len(err.value.problems) == 4


def test_label_spellings_are_normalised():
    typed_tie = label_space("typed-tie")
    assert typed_tie.normalise_human(1) == "1"
    assert typed_tie.normalise_human(2.0) == typed_tie.normalise_human("2.0") == "2"
    assert typed_tie.normalise_human("Both Good") == "both_good"
    assert typed_tie.normalise_human("both-bad") == "both_bad"
    assert typed_tie.normalise_human("tie") is None


def test_missing_manifest_names_the_expected_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json or manifest.jsonl"):
        load_benchmark(tmp_path)


# -- strict manifests: what would silently shrink the scored set is refused -------------------


@pytest.mark.parametrize(
    "name, text", [("manifest.json", "[]"), ("manifest.jsonl", "\n"), ("manifest.json", '{"items": []}')]
)
def test_an_empty_manifest_is_an_error(folder, name, text):
    (folder / name).write_text(text)
    with pytest.raises(ManifestError, match="no items"):
        load_benchmark(folder)


def test_an_empty_manifest_stops_blueprints_with_the_cause(folder, capsys):
    from trace_eval.cli import main

    (folder / "manifest.json").write_text("[]")
    assert main(["blueprints", str(folder), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and "no items" in err
    assert not (folder / "blueprints").exists()


def test_misspelled_fields_and_label_keys_are_errors_with_a_guess(folder):
    spelled = hcot_item("spelled")
    spelled["lable"] = spelled.pop("label")
    one_path = hcot_item("one-path")
    one_path["audio_1_path"] = one_path.pop("audio1_path")
    text = hcot_item("text")
    text["instrucion_text"] = text.pop("instruction_text")
    overal = hcot_item("overal", label={"content": "1", "overal": "1"})
    fine = hcot_item("fine")
    (folder / "manifest.json").write_text(json.dumps([spelled, one_path, text, overal, fine]))
    with pytest.raises(ManifestError) as err:
        load_benchmark(folder)
    problems = err.value.problems
    assert "item spelled: field 'lable' is not a manifest field; did you mean 'label'?" in problems
    assert "item one-path: field 'audio_1_path' is not a manifest field; did you mean 'audio1_path'?" in problems
    assert "item one-path: needs audio1_path and audio2_path, or audio_path" in problems
    assert "item text: field 'instrucion_text' is not a manifest field; did you mean 'instruction_text'?" in problems
    assert "item overal: label.overal is not a label of any rubric; did you mean 'overall'?" in problems
    assert not any(p.startswith("item fine") for p in problems)
    assert len(problems) == 5
    message = str(err.value)  # what is allowed is said once, below the problems
    assert message.count("Kept as context: context, dialogue_history, character, style_elements, hcot") == 1
    assert message.count("Label keys: content, voice_quality, paralinguistics") == 1


def test_context_fields_stay_allowed(folder):
    item = hcot_item(
        0,
        context="a quiz",
        dialogue_history=[{"speaker": "User", "text": "Hi"}],
        character={"name": "Holmes"},
        style_elements=["slowly"],
        instruction_id=7,
        assistant_message={"label": "1"},
        transcript1="hello",
        transcript2="hullo",
        instruction_transcript="say hello",
        uid="a-7",
        notes="re-recorded",
        category="pace",
    )
    (folder / "manifest.json").write_text(json.dumps([item]))
    extra = load_benchmark(folder).pairs[0].extra
    assert {
        "context",
        "dialogue_history",
        "character",
        "style_elements",
        "instruction_id",
        "uid",
        "notes",
        "category",
        "hcot",
        "transcript1",
    } <= set(extra)


def test_a_near_miss_of_a_field_the_item_carries_is_context(folder):
    """`uid` beside `index` names nothing new; without an id it would be a misspelled `id`."""
    (folder / "manifest.json").write_text(json.dumps([hcot_item(0, uid="x")]))
    assert load_benchmark(folder).pairs[0].extra["uid"] == "x"


def test_the_release_name_of_paralinguistics_is_read_as_paralinguistics(folder):
    release = hcot_item(0, label={"content": "1", "voice_quality": "2", "instruction_following_audio": "Both Good"})
    twice = hcot_item(1, label={"paralinguistics": "1", "instruction_following_audio": "2"})
    (folder / "manifest.json").write_text(json.dumps([release]))
    assert load_benchmark(folder).pairs[0].label == {
        "content": "1",
        "voice_quality": "2",
        "paralinguistics": "both_good",
    }
    (folder / "manifest.json").write_text(json.dumps([release, twice]))
    with pytest.raises(ManifestError, match="item 1: label gives both paralinguistics and instruction_following_audio"):
        load_benchmark(folder)


def test_label_keys_of_a_rubric_file_need_that_rubric(folder):
    from trace_eval.rubrics import load_rubric

    (folder / "manifest.json").write_text(json.dumps([hcot_item(0, label={"warmth": 4})]))
    assert load_benchmark(folder).pairs[0].label == {"warmth": 4}  # no rubric known: not a near miss, kept
    with pytest.raises(ManifestError, match="label.warmth is not a label of any rubric"):
        load_benchmark(folder, rubric=load_rubric("trace"))  # judged with trace: refused
    styled = hcot_item(0, label={"style_following": 4, "overall": "1"})
    (folder / "manifest.json").write_text(json.dumps([styled]))
    assert load_benchmark(folder, rubric=load_rubric("trace")).pairs[0].label["style_following"] == 4


def test_every_kind_of_problem_is_reported_at_once_with_its_item_id(folder):
    misspelled = hcot_item("a")
    misspelled["lable"] = misspelled.pop("label")
    items = [
        misspelled,
        hcot_item("b", label={"overal": "1"}),
        hcot_item("c", audio1_path="audio/x.wav"),
        hcot_item("a"),
    ]
    (folder / "manifest.json").write_text(json.dumps(items))
    with pytest.raises(ManifestError) as err:
        load_benchmark(folder)
    assert [p.split(":")[0] for p in err.value.problems] == ["item a", "item b", "item c", "item a"]


def test_languages_are_declared_per_clip_or_for_the_whole_benchmark(folder):
    _wav(folder / "audio" / "c.wav")
    items = [
        hcot_item(0, audio2_language="fr"),
        {**hcot_item(1, instruction_language="de"), "instruction_path": "audio/c.wav"},
        {"id": "written", "instruction_text": "Di hola.", "audio_path": "audio/a.wav"},
    ]
    (folder / "manifest.json").write_text(json.dumps({"instruction_language": "es", "items": items}))
    bench = load_benchmark(folder)
    by_id = {pair.id: pair for pair in bench}
    # the benchmark's default for the instruction, an item's own field over it; answers only where declared
    assert by_id["0"].languages == {"instruction_language": "es", "audio2_language": "fr"}
    assert by_id["1"].languages == {"instruction_language": "de"}
    assert by_id["written"].languages == {"instruction_language": "es"}  # of instruction_text
    assert bench.declared_languages() == {"audio/q.wav": "es", "audio/b.wav": "fr", "audio/c.wav": "de"}
    assert "instruction_language" not in by_id["0"].extra


def test_a_language_code_whisper_does_not_know_is_refused_with_the_one_meant(folder):
    items = [hcot_item(0, instruction_language="es-ES"), hcot_item(1, audio1_language="cmn", audio2_language="xx")]
    (folder / "manifest.json").write_text(json.dumps({"audio1_language": "Spanish", "items": items}))
    with pytest.raises(ManifestError) as raised:
        load_benchmark(folder)
    message = str(raised.value)
    assert "manifest audio1_language: 'Spanish' is not a language code Whisper knows" in message
    assert "did you mean 'es' (Spanish)?" in message
    assert "item 0: instruction_language 'es-ES' is not a language code" in message
    assert (
        "item 1: audio1_language 'cmn' is not a language code Whisper knows (ISO 639-1, e.g. en, es, fr, zh); "
        "did you mean 'zh' (Chinese)?" in message
    )
    assert "item 1: audio2_language 'xx'" in message


def test_one_clip_declared_in_two_languages_is_refused(folder):
    items = [hcot_item(0, instruction_language="es"), hcot_item(1, instruction_language="pt")]
    (folder / "manifest.json").write_text(json.dumps(items))
    with pytest.raises(
        ManifestError, match="item 1: instruction_language 'pt' for audio/q.wav, which item 0 declares 'es'"
    ):
        load_benchmark(folder)


@pytest.mark.parametrize(
    "written, meant",
    [("spa", "es"), ("castellano", "es"), ("Español", "es"), ("fre", "fr"), ("deu", "de"), ("日本語", "ja")],
)
def test_three_letter_codes_and_a_language_s_own_name_are_answered_with_the_code_meant(written, meant):
    from trace_eval.languages import LANGUAGES, code_problem

    assert f"did you mean {meant!r} ({LANGUAGES[meant]})?" in (code_problem(written) or "")
