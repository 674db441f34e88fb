"""experiments/ffma_banks.py's count, on SASS lines as cuobjdump prints them (docs/ladders/sgemm.md quotes it)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

from ffma_banks import count  # noqa: E402

SASS = """
        /*0a50*/                   FFMA.FTZ R80, R24, R33.reuse, R80 ;               /* 0x000000211850a223 */
        /*0a60*/                   FFMA.FTZ R81, R24, R33.reuse, R81 ;               /* 0x000000211851a223 */
        /*0a70*/                   FFMA R5, -R7, R9, |R11| ;                         /* 0x0000000907057223 */
        /*0a80*/                   FFMA R2, R4.reuse, RZ, R2 ;                       /* 0x000000ff04027223 */
        /*0a90*/                   FADD R6, R8, R10 ;                                /* 0x0000000a08067221 */
"""


def test_two_fresh_sources_of_one_parity_count_and_reused_or_constant_ones_do_not():
    got = count(SASS)
    # R24 and R80 even, fresh: one bank; R24 even and R81 odd: two; R7, R9, R11 odd (a negated and an
    # absolute source are registers too); R4 reused, RZ no register, R2 alone; the FADD is no FFMA
    assert (got["ffma"], got["reuse"], got["same_bank"]) == (4, 3, 2)
