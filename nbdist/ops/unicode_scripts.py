"""The script of a code point as ICU's ``UScriptCode`` number (what TF's ``UnicodeScript``
returns): the script from the Unicode Character Database's Scripts.txt as fontTools ships
it (a dependency of matplotlib), numbered by ICU's enum (icu4c ``uscript.h``, whose order is
fixed: codes are only ever appended)."""

import functools

__all__ = ["script_code"]

# ICU's UScriptCode order: the ISO 15924 code of USCRIPT_COMMON (0), USCRIPT_INHERITED (1), ...
_ICU_ORDER = """
Zyyy Zinh Arab Armn Beng Bopo Cher Copt Cyrl Dsrt Deva Ethi Geor Goth Grek Gujr Guru Hani Hang Hebr
Hira Knda Kana Khmr Laoo Latn Mlym Mong Mymr Ogam Ital Orya Runr Sinh Syrc Taml Telu Thaa Thai Tibt
Cans Yiii Tglg Hano Buhd Tagb Brai Cprt Limb Linb Osma Shaw Tale Ugar Hrkt Bugi Glag Khar Sylo Talu
Tfng Xpeo Bali Batk Blis Brah Cham Cirt Cyrs Egyd Egyh Egyp Geok Hans Hant Hmng Hung Inds Java Kali
Latf Latg Lepc Lina Mand Maya Mero Nkoo Orkh Perm Phag Phnx Plrd Roro Sara Syre Syrj Syrn Teng Vaii
Visp Xsux Zxxx Zzzz Cari Jpan Lana Lyci Lydi Olck Rjng Saur Sgnw Sund Moon Mtei Armi Avst Cakm Kore
Kthi Mani Phli Phlp Phlv Prti Samr Tavt Zmth Zsym Bamu Lisu Nkgb Sarb Bass Dupl Elba Gran Kpel Loma
Mend Merc Narb Nbat Palm Sind Wara Afak Jurc Mroo Nshu Shrd Sora Takr Tang Wole Hluw Khoj Tirh Aghb
Mahj Ahom Hatr Modi Mult Pauc Sidd Adlm Bhks Marc Newa Osge Hanb Jamo Zsye Gonm Soyo Zanb Dogr Gong
Maka Medf Rohg Sogd Sogo Elym Hmnp Nand Wcho Chrs Diak Kits Yezi Cpmn Ougr Tnsa Toto Vith Kawi Nagm
""".split()  # noqa: SIM905 - ICU's table, ten to a line
_CODES = {iso: i for i, iso in enumerate(_ICU_ORDER)}
_UNKNOWN = _CODES["Zzzz"]


@functools.lru_cache(maxsize=4096)
def script_code(code_point):
    """ICU's script code of `code_point`; -1 (``USCRIPT_INVALID_CODE``) outside
    ``[0, 0x10FFFF]``, ``USCRIPT_UNKNOWN`` (103) for an unassigned one."""
    if not 0 <= code_point <= 0x10FFFF:
        return -1
    from fontTools import unicodedata  # noqa: PLC0415 - loads its tables on first use

    return _CODES.get(unicodedata.script(chr(code_point)), _UNKNOWN)
