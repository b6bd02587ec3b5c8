"""The voice-name rule (`wyoming_hayakoe.resolve`), case by case, on names alone: what each
name chooses, and what the fallback and the refusal say when it chooses nothing."""

from __future__ import annotations

import pytest
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker

from wyoming_hayakoe.resolve import (
    PresetTarget,
    Resolution,
    UnknownName,
    UnknownNameError,
    VoiceNames,
    resolve_name,
)

MEI_STYLES = ("Neutral", "Bright", "Calm", "High", "Low")
NAMES = VoiceNames(
    {
        "openjtalk-mei": MEI_STYLES,
        "jvnv-F1-jp": ("Neutral", "Happy"),
        "Jvnv-F1-JP": ("Neutral",),  # differs only in case: an exact match wins
        "ns:voice": ("Neutral", "a:b"),  # separators inside a voice and a style
    },
    {"alarm": PresetTarget("openjtalk-mei", "High"), "soft": PresetTarget("jvnv-F1-jp")},
)
DEFAULT = "openjtalk-mei"
ALL = tuple(NAMES.all())


def voice_problem(asked: str) -> UnknownName:
    return UnknownName("voice", asked, ALL)


def style_problem(asked: str, voice: str) -> UnknownName:
    return UnknownName("style", asked, NAMES.voices[voice], voice)


CASES = [
    # (name, style) → Resolution(voice, style, preset, problems)
    ((None, None), Resolution(DEFAULT, None)),
    (("", None), Resolution(DEFAULT, None)),
    (("  ", "  "), Resolution(DEFAULT, None)),
    ((None, "calm"), Resolution(DEFAULT, "Calm")),
    (("jvnv-F1-jp", None), Resolution("jvnv-F1-jp", None)),
    (("Jvnv-F1-JP", None), Resolution("Jvnv-F1-JP", None)),
    (("JVNV-f1-jp", None), Resolution("jvnv-F1-jp", None)),  # the first that differs in case
    ((" jvnv-F1-jp ", None), Resolution("jvnv-F1-jp", None)),
    (("jvnv-F1-jp:Happy", None), Resolution("jvnv-F1-jp", "Happy")),
    (("JVNV-F1-JP:HAPPY", None), Resolution("jvnv-F1-jp", "Happy")),
    (("jvnv-F1-jp:Happy", "neutral"), Resolution("jvnv-F1-jp", "Neutral")),  # apart wins
    (("jvnv-F1-jp", "HAPPY"), Resolution("jvnv-F1-jp", "Happy")),
    (("ns:voice", None), Resolution("ns:voice", None)),
    (("ns:voice:a:b", None), Resolution("ns:voice", "a:b")),
    (("NS:VOICE:Neutral", None), Resolution("ns:voice", "Neutral")),
    (("alarm", None), Resolution("openjtalk-mei", "High", "alarm")),
    (("ALARM", None), Resolution("openjtalk-mei", "High", "alarm")),
    (("alarm", "low"), Resolution("openjtalk-mei", "Low", "alarm")),  # apart wins over preset
    (("soft", None), Resolution("jvnv-F1-jp", None, "soft")),
    # names that choose nothing: the fallback, and why
    (("jvnv-F9-jp", None), Resolution(DEFAULT, None, None, (voice_problem("jvnv-F9-jp"),))),
    (("alarm:High", None), Resolution(DEFAULT, None, None, (voice_problem("alarm:High"),))),
    (
        ("jvnv-F1-jp:Angry", None),
        Resolution("jvnv-F1-jp", None, None, (style_problem("Angry", "jvnv-F1-jp"),)),
    ),
    (
        ("jvnv-F1-jp:", None),
        Resolution("jvnv-F1-jp", None, None, (style_problem("", "jvnv-F1-jp"),)),
    ),
    (
        ("jvnv-F1-jp", "Sad"),
        Resolution("jvnv-F1-jp", None, None, (style_problem("Sad", "jvnv-F1-jp"),)),
    ),
    (
        ("jvnv-F1-jp:Happy", "Sad"),  # the name's style stays when the one apart is unknown
        Resolution("jvnv-F1-jp", "Happy", None, (style_problem("Sad", "jvnv-F1-jp"),)),
    ),
    (
        ("alarm", "Sad"),
        Resolution("openjtalk-mei", "High", "alarm", (style_problem("Sad", "openjtalk-mei"),)),
    ),
    (
        ("nobody", "Sad"),  # both: the default voice has no such style either
        Resolution(DEFAULT, None, None, (voice_problem("nobody"), style_problem("Sad", DEFAULT))),
    ),
    (
        ("nobody", "bright"),  # the style apart still applies to the fallback voice
        Resolution(DEFAULT, "Bright", None, (voice_problem("nobody"),)),
    ),
]


@pytest.mark.parametrize(("asked", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_the_rule(asked: tuple[str | None, str | None], expected: Resolution) -> None:
    name, style = asked
    found = resolve_name(NAMES, name, style, default=DEFAULT)
    assert found == expected
    if expected.problems:  # the refusal names the first problem
        with pytest.raises(UnknownNameError) as raised:
            found.exact()
        assert raised.value.unknown == expected.problems[0]
    else:
        assert found.exact() is found


def test_every_listed_name_chooses_itself() -> None:
    for name in NAMES.all():
        found = resolve_name(NAMES, name, default=DEFAULT).exact()
        chosen = found.preset or (
            f"{found.voice}:{found.style}" if found.style is not None else found.voice
        )
        assert chosen == name


def test_messages_name_the_asked_name_and_what_exists() -> None:
    found = resolve_name(NAMES, "jvnv-F9-jp", default=DEFAULT)
    with pytest.raises(UnknownNameError) as raised:
        found.exact()
    message = str(raised.value)
    assert message.startswith("unknown voice 'jvnv-F9-jp'; available: openjtalk-mei, ")
    assert "jvnv-F1-jp:Happy" in message and message.endswith("alarm, soft")
    style = resolve_name(NAMES, "openjtalk-mei:Angry", default=DEFAULT).problems[0]
    assert style.message("host:10200") == (
        "unknown style 'Angry' of voice openjtalk-mei on host:10200; "
        "available: Neutral, Bright, Calm, High, Low"
    )


def test_the_default_must_be_a_voice() -> None:
    with pytest.raises(ValueError, match="'alarm'"):
        resolve_name(NAMES, "x", default="alarm")


def _voice(name: str, speakers: tuple[str, ...] | None) -> TtsVoice:
    return TtsVoice(
        name=name,
        description=name,
        attribution=Attribution(name="", url=""),
        installed=True,
        version=None,
        languages=["ja"],
        speakers=[TtsVoiceSpeaker(name=s) for s in speakers] if speakers else None,
    )


def test_names_from_a_servers_describe() -> None:
    """What a client sees: style voices are left to the rule, a preset takes any style (the
    server decides), and the list of names is the server's own."""
    listed = [
        _voice("openjtalk-mei", MEI_STYLES),
        *(_voice(f"openjtalk-mei:{s}", None) for s in MEI_STYLES),
        _voice("alarm", None),
    ]
    info = Info(
        tts=[
            TtsProgram(
                name="hayakoe",
                description="",
                attribution=Attribution(name="", url=""),
                installed=True,
                version=None,
                voices=listed,
            )
        ]
    )
    names = VoiceNames.from_info(info)
    assert names.voices == {"openjtalk-mei": MEI_STYLES, "alarm": ()}
    assert names.all() == [v.name for v in listed]
    assert resolve_name(names, "OPENJTALK-MEI:calm", default="alarm").exact() == Resolution(
        "openjtalk-mei", "Calm"
    )
    assert resolve_name(names, "Alarm", "Low", default="openjtalk-mei").exact() == Resolution(
        "alarm", "Low"
    )
    assert resolve_name(names, "alrm", default="alarm").problems == (
        UnknownName("voice", "alrm", tuple(v.name for v in listed)),
    )


# -- issue 54 findings 12 and 13: Unicode forms, presets waiting for their voice ------------
def test_a_name_in_another_unicode_form_is_the_same_name() -> None:
    import unicodedata

    nfc, nfd = (unicodedata.normalize(f, "café") for f in ("NFC", "NFD"))
    names = VoiceNames({nfc: ("Neutral",), "openjtalk-mei": MEI_STYLES})
    for asked in (nfd, nfd.upper(), nfc):
        assert resolve_name(names, asked, default=DEFAULT) == Resolution(nfc, None), asked
    # the voice's own spelling wins over one that is the same only when composed
    both = VoiceNames({nfc: (), nfd: (), "openjtalk-mei": ()})
    assert resolve_name(both, nfd, default=DEFAULT).voice == nfd


def test_a_preset_waiting_for_its_voice_names_the_missing_voice() -> None:
    names = VoiceNames({"openjtalk-mei": MEI_STYLES}, {}, waiting={"alarm": "ann"})
    found = resolve_name(names, "Alarm", default=DEFAULT)
    assert (found.voice, found.preset) == (DEFAULT, None)  # the fallback: the default voice
    (problem,) = found.problems
    assert (problem.kind, problem.asked, problem.missing) == ("voice", "alarm", "ann")
    assert "alarm" not in names.all()
    with pytest.raises(UnknownNameError) as err:
        found.exact()
    assert "preset 'alarm'" in str(err.value) and "voice 'ann' is missing" in str(err.value)


def test_a_preset_s_style_is_found_as_its_voice_spells_it() -> None:
    names = VoiceNames(
        {"openjtalk-mei": MEI_STYLES, "ann": ("ノーマル", "Happy")},
        {"alarm": PresetTarget("ann", "happy"), "odd": PresetTarget("ann", "Sleepy")},
    )
    assert resolve_name(names, "alarm", default=DEFAULT) == Resolution("ann", "Happy", "alarm")
    odd = resolve_name(names, "odd", default=DEFAULT)
    assert (odd.voice, odd.style, odd.preset) == ("ann", None, "odd")
    assert odd.problems == (UnknownName("style", "Sleepy", ("ノーマル", "Happy"), "ann"),)
