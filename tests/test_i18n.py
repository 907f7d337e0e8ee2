"""nbdist.notebook.i18n: every language says every phrase, with the same fields."""

import string

import pytest

from nbdist.notebook import i18n


def fields(phrase):
    return {name for _, name, _, _ in string.Formatter().parse(phrase) if name}


def test_every_language_has_every_phrase_with_the_same_fields():
    en = i18n.STRINGS["en"]
    for lang in i18n.LANGS:
        assert i18n.STRINGS[lang].keys() == en.keys(), lang
        assert {k: fields(v) for k, v in i18n.STRINGS[lang].items()} == {k: fields(v) for k, v in en.items()}


def test_a_phrase_is_filled_in():
    assert i18n.text("zh", "report_title", mode="sync") == "nbdist 演示 · sync"
    assert i18n.text("en", "c_time") == "time (s)"


def test_an_unknown_language_says_which_there_are():
    with pytest.raises(
        ValueError, match=r"lang 'fr' is not one of \('en', 'zh'\); pass --lang en or --lang zh"
    ):
        i18n.text("fr", "c_time")


@pytest.mark.parametrize(
    ("lang_env", "expected"),
    [("zh_CN.UTF-8", "zh"), ("zh_TW", "zh"), ("en_US.UTF-8", "en"), ("", "en"), ("C", "en")],
)
def test_the_default_language_follows_the_lang_env(lang_env, expected):
    assert i18n.default_lang({"LANG": lang_env}) == expected


def test_only_chinese_changes_the_fonts():
    assert i18n.font_rc("en") == {}
    assert "WenQuanYi Micro Hei" in i18n.font_rc("zh")["font.sans-serif"]
