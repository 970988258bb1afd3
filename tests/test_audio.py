"""Decoding: every supported format, any rate, any channel count, and clear errors for the rest."""

import numpy as np
import pytest
import soundfile as sf

from trace_eval.audio import AudioLoadingError, load_audio, repeat_to_length
from trace_eval.synth import Voice, speak


@pytest.fixture(scope="module")
def spoken(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    return {
        suffix: speak("Decoding the same sentence in every format.", folder / f"s{suffix}", Voice(sample_rate=22050))
        for suffix in (".wav", ".flac", ".ogg", ".mp3")
    }


@pytest.mark.parametrize("suffix", [".wav", ".flac", ".ogg", ".mp3"])
def test_every_format_decodes_to_the_same_speech(spoken, suffix):
    reference = load_audio(spoken[".wav"])
    audio = load_audio(spoken[suffix])
    assert audio.sample_rate == 22050 and audio.channels == 1
    # lossy codecs add a little padding at the edges, never seconds
    assert audio.duration_s == pytest.approx(reference.duration_s, abs=0.08)
    rms = lambda x: float(np.sqrt(np.mean(x**2)))  # noqa: E731
    assert rms(audio.samples) == pytest.approx(rms(reference.samples), rel=0.1)


def test_stereo_is_mixed_to_mono_and_resampled_once(tmp_path):
    t = np.arange(48000) / 48000
    left, right = 0.5 * np.sin(2 * np.pi * 440 * t), np.zeros_like(t)
    sf.write(tmp_path / "st.wav", np.stack([left, right], axis=1), 48000)
    audio = load_audio(tmp_path / "st.wav")
    assert audio.channels == 2 and audio.samples.ndim == 1
    assert np.abs(audio.samples).max() == pytest.approx(0.25, abs=0.01)
    at16 = audio.at(16000)
    assert len(at16) == 16000 and at16 is audio.at(16000)  # cached, not recomputed


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty file"),
        (b"just some text, not audio\n" * 20, "not decodable audio"),
    ],
)
def test_unusable_files_say_why(tmp_path, content, reason):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(AudioLoadingError, match=reason):
        load_audio(path)


def test_nan_and_missing_files_are_refused(tmp_path):
    samples = np.zeros(1600, dtype=np.float32)
    samples[10] = np.nan
    sf.write(tmp_path / "nan.wav", samples, 16000, subtype="FLOAT")
    with pytest.raises(AudioLoadingError, match="NaN"):
        load_audio(tmp_path / "nan.wav")
    with pytest.raises(AudioLoadingError, match="not found"):
        load_audio(tmp_path / "absent.wav")


def test_repeat_to_length_tiles_short_clips():
    x = np.arange(3, dtype=np.float32)
    assert repeat_to_length(x, 7).tolist() == [0, 1, 2, 0, 1, 2, 0]
    long = np.ones(10, dtype=np.float32)
    assert repeat_to_length(long, 5) is long


@pytest.mark.parametrize("codec, suffix", [("pcm_s16le", ".mka"), ("aac", ".m4a")])
def test_containers_libsndfile_cannot_read_decode_through_pyav(tmp_path, codec, suffix):
    import av

    path = tmp_path / f"stereo{suffix}"
    t = np.arange(16000) / 16000
    tone = (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=16000, layout="stereo")
        fmt = "s16" if codec == "pcm_s16le" else "fltp"
        planes = np.stack([tone, tone])
        if fmt == "s16":  # packed: interleaved samples in one plane
            planes = (planes.T.reshape(1, -1) * 32767).astype(np.int16)
        frame = av.AudioFrame.from_ndarray(planes, format=fmt, layout="stereo")
        frame.sample_rate = 16000
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    audio = load_audio(path)
    assert audio.channels == 2 and audio.sample_rate == 16000
    assert audio.duration_s == pytest.approx(1.0, abs=0.1)
    assert np.abs(audio.samples).max() == pytest.approx(0.3, abs=0.05)
