"""What the build reads from `ptxas -v`: registers, spills, and the compiler's "Potential Performance Loss"
notes (printed before the per-function lines, so matched by name), shown by `eval --compile-only` and the
tool-rich graph's compiled-code digest."""

from kernelseek.harness.build import BuildResult, parse_ptxas
from kernelseek.toolrich.digest import _resources

FA = "_ZN2ks11fa_fwd_sm90ILi96ELi128ELi2ELi2ELb0ELb0EEEv14CUtensorMap_stS1_S1_S1_NS_6ParamsE"
COMBINE = "_ZN2ks10fa_combineILi64EEEvNS_10CombParamsE"
LOG = f"""\
ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to \
insufficient register resources for the wgmma pipeline in the function '{FA}'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '{FA}' for 'sm_90a'
ptxas info    : Function properties for {FA}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers
ptxas info    : Compile time = 285.330 ms
ptxas info    : Compiling entry function '{COMBINE}' for 'sm_90a'
ptxas info    : Function properties for {COMBINE}
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1024 bytes smem
"""


def test_a_performance_note_printed_before_its_function_lands_on_that_kernel():
    fa, combine = parse_ptxas(LOG)
    assert (fa["kernel"], fa["registers"], fa["spill_stores"]) == (FA, 168, 0)
    assert fa["advisories"] == ["(C7511) wgmma.mma_async instructions are serialized due to insufficient register "
                                "resources for the wgmma pipeline"]
    assert (combine["registers"], combine["smem_bytes"], combine["spill_loads"], combine["advisories"]) == \
        (32, 1024, 4, [])
    built = BuildResult("k.so", "sm90", "0" * 64, False, [], resources=[fa, combine])
    assert built.spills == 8 and built.advisories == [f"{FA}: {fa['advisories'][0]}"]
    assert any("potential performance loss: (C7511) wgmma" in line for line in _resources([fa, combine]))


def test_a_cached_record_from_before_the_notes_reads_as_none():
    old = {"kernel": "k", "target": "sm_90a", "registers": 40, "smem_bytes": 0, "stack_frame": 0,
           "spill_stores": 0, "spill_loads": 0}
    assert BuildResult("k.so", "sm90", "0" * 64, True, [], resources=[old]).advisories == []
    assert not any("performance" in line for line in _resources([old]))
