"""Fault fixtures: kernels that are wrong in the ways a judge must catch, written from a correct seed.

Each fixture is one self-contained file: the seed's source with its entry point renamed `seed_impl`,
followed by a wrapper that exports the real entry point and misbehaves. `expected` is a fragment of
the reason the judge must give.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CUDA_WRAPPERS = {
    "hang": ("hang", r"""
// spins until a poisoned (NaN) word of lse reads 12345, which never happens
__global__ void ks_spin(const volatile int* word) { while (*word != 12345) { } }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    ks_spin<<<1, 1, 0, (cudaStream_t)stream>>>((const volatile int*)lse);
    return 0;
}"""),
    "fault": ("CUDA error", r"""
__global__ void ks_wild_write(float* p) { p[1ll << 40] = 1.0f; }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    ks_wild_write<<<1, 1, 0, (cudaStream_t)stream>>>(lse);
    return 0;
}"""),
    "nan": ("NaN", r"""
__global__ void ks_nan(float* p) { p[0] = __int_as_float(0x7fc00000); }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    ks_nan<<<1, 1, 0, (cudaStream_t)stream>>>(lse);
    return status;
}"""),
    "partial": ("unwritten", r"""
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    // computes one query row fewer than asked: the last row of each sequence is never written
    return seed_impl(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, batch, seqlen_q > 1 ? seqlen_q - 1 : 1,
                     seqlen_k, heads_q, heads_kv, head_dim, q_strides, k_strides, v_strides, o_strides,
                     softmax_scale, softcap, causal, stream);
}"""),
    "pointer_cache": ("the timed call", r"""
// Answers from a cache keyed on the input and output pointers: stale when the values change in place.
struct Entry { const void* q; void* out; void* saved_out; void* saved_lse; size_t out_bytes, lse_bytes; };
static Entry ks_cache[256];
static int ks_cached = 0;
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    size_t out_bytes = (size_t)batch * seqlen_q * heads_q * head_dim * 2, lse_bytes = (size_t)batch * heads_q * seqlen_q * 4;
    cudaStream_t s = (cudaStream_t)stream;
    for (int i = 0; i < ks_cached; ++i) {
        if (ks_cache[i].q == q && ks_cache[i].out == out) {
            cudaMemcpyAsync(out, ks_cache[i].saved_out, out_bytes, cudaMemcpyDeviceToDevice, s);
            cudaMemcpyAsync(lse, ks_cache[i].saved_lse, lse_bytes, cudaMemcpyDeviceToDevice, s);
            return 0;
        }
    }
    int status = seed_impl(FA_ARGS);
    if (ks_cached < 256) {
        Entry& e = ks_cache[ks_cached++];
        e.q = q; e.out = out; e.out_bytes = out_bytes; e.lse_bytes = lse_bytes;
        cudaMalloc(&e.saved_out, out_bytes); cudaMalloc(&e.saved_lse, lse_bytes);
        cudaMemcpyAsync(e.saved_out, out, out_bytes, cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(e.saved_lse, lse, lse_bytes, cudaMemcpyDeviceToDevice, s);
    }
    return status;
}"""),
    "skip_after_first": ("the timed call", r"""
static int ks_calls = 0;
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    if (ks_calls++ > 0) return 0;  // "already computed"
    return seed_impl(FA_ARGS);
}"""),
    "overrun_out": ("past the end of out", r"""
__global__ void ks_poke(unsigned char* p) { p[threadIdx.x] = 0x3f; }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    size_t out_bytes = (size_t)batch * seqlen_q * heads_q * head_dim * 2;  // the contiguous layout
    ks_poke<<<1, 6, 0, (cudaStream_t)stream>>>((unsigned char*)out + out_bytes);
    return status;
}"""),
    "overrun_lse": ("past the end of lse", r"""
__global__ void ks_poke(float* p) { p[threadIdx.x] = 0.0f; }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    ks_poke<<<1, 2, 0, (cudaStream_t)stream>>>(lse + (size_t)batch * heads_q * seqlen_q);
    return status;
}"""),
    "clobber": ("changed its input q", r"""
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    cudaMemsetAsync(const_cast<void*>(q), 0, 64, (cudaStream_t)stream);
    return status;
}"""),
    "not_capture_safe": ("not capture-safe", r"""
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    void* scratch = nullptr;
    cudaMalloc(&scratch, 1 << 20);  // an allocation on every call
    int status = seed_impl(FA_ARGS);
    cudaFree(scratch);
    return status;
}"""),
}

# Refused before anything runs: the guard names what is not allowed (runs with CPATH at fake_cutlass()).
GUARD_WRAPPERS = {
    "python_c_api": ("uses PyRun_SimpleString", r"""
extern "C" int PyRun_SimpleString(const char*);
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    PyRun_SimpleString("import kernelseek.harness.records as r; r.check_result = lambda *a: None");
    return seed_impl(FA_ARGS);
}"""),
    "dlopen_assembled": ("uses dlopen", r"""
extern "C" void* dlopen(const char*, int);
extern "C" void* dlsym(void*, const char*);
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    const char parts[] = {'l', 'i', 'b', 'c', 'u', 'b', 'l', 'a', 's', '.', 's', 'o', '.', '1', '3', 0};
    char name[sizeof parts];
    for (unsigned i = 0; i < sizeof parts; ++i) name[i] = parts[i];
    void* lib = dlopen(name, 2);
    if (lib) dlsym(lib, "cublasCreate_v2");
    return seed_impl(FA_ARGS);
}"""),
    "proc_self_mem": ("uses fopen", r"""
#include <cstdio>
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    std::FILE* mem = std::fopen("/proc/self/mem", "r+");
    if (mem) std::fclose(mem);
    return seed_impl(FA_ARGS);
}"""),
    "macro_include": ("CUTLASS is not allowed", r"""
#define KS_HEADER <cutlass/cutlass.h>
#include KS_HEADER
extern "C" int ks_flash_attn_fwd(FA_PARAMS) { return seed_impl(FA_ARGS); }"""),
    "absolute_include": ("absolute path", r"""
#include </usr/include/stdint.h>
extern "C" int ks_flash_attn_fwd(FA_PARAMS) { return seed_impl(FA_ARGS); }"""),
}
# Judged correct: words are not code (expected reason None).
PASSING_WRAPPERS = {"comment_cutlass": (None, r"""
// CUTLASS would do this with #include <cutlass/gemm/device/gemm.h>; cuBLAS with cublasGemmEx.
extern "C" int ks_flash_attn_fwd(FA_PARAMS) { return seed_impl(FA_ARGS); }""")}

# Correct in value (the seed computes every output), unsafe in a small kernel launched beside it on every
# call: each is one compute-sanitizer tool's finding and no other tool's. (tool, fragment of the report).
SANITIZER_WRAPPERS = {
    "smem_oob": ("memcheck", "Invalid __shared__ read", r"""
// Asks for n floats of dynamic shared memory and reads tile[n], one past the end (inside the hardware's
// allocation granularity, so nothing faults and nothing it computes is used).
__device__ float ks_sink_oob[1];
__global__ void ks_smem_oob(int n) {
    extern __shared__ float tile[];
    if (threadIdx.x < n) tile[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) ks_sink_oob[0] = tile[n];
}
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    ks_smem_oob<<<1, 32, 25 * sizeof(float), (cudaStream_t)stream>>>(25);
    return status;
}"""),
    "smem_race": ("racecheck", "Race reported", r"""
// Each thread writes its word of a shared tile and reads another warp's word with no barrier between.
__device__ float ks_sink_race[64];
__global__ void ks_smem_race() {
    __shared__ float tile[64];
    tile[threadIdx.x] = (float)threadIdx.x;
    ks_sink_race[threadIdx.x] = tile[63 - threadIdx.x];  // a __syncthreads() belongs before this read
}
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    ks_smem_race<<<1, 64, 0, (cudaStream_t)stream>>>();
    return status;
}"""),
    "uninit_read": ("initcheck", "Uninitialized __global__ memory read", r"""
// Reads a buffer it allocated once and never wrote (the value goes nowhere that is checked).
__device__ float ks_sink_uninit[32];
static float* ks_never_written = nullptr;
__global__ void ks_read_uninit(const float* p) { ks_sink_uninit[threadIdx.x] = p[threadIdx.x]; }
extern "C" int ks_flash_attn_fwd(FA_PARAMS) {
    int status = seed_impl(FA_ARGS);
    if (!ks_never_written && cudaMalloc(&ks_never_written, 32 * sizeof(float)) != cudaSuccess) return 1;
    ks_read_uninit<<<1, 32, 0, (cudaStream_t)stream>>>(ks_never_written);
    return status;
}"""),
}


def fake_cutlass(folder: Path) -> Path:
    """An include folder holding a fake `cutlass/cutlass.h`, for CPATH: the guard must refuse it
    although the compiler can open it."""
    (folder / "cutlass").mkdir(parents=True, exist_ok=True)
    (folder / "cutlass" / "cutlass.h").write_text("#pragma once\nstatic const int cutlass_fake = 1;\n")
    return folder


FA_PARAMS = ("const void* q, const void* k, const void* v, void* out, float* lse, const int* cu_seqlens_q, "
             "const int* cu_seqlens_k, int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv, "
             "int head_dim, const long long* q_strides, const long long* k_strides, const long long* v_strides, "
             "const long long* o_strides, float softmax_scale, float softcap, int causal, void* stream")
FA_ARGS = ("q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, "
           "q_strides, k_strides, v_strides, o_strides, softmax_scale, softcap, causal, stream")

CPU_WRAPPERS = {
    "hang": ("hang", 'extern "C" int ks_rmsnorm(RMS_PARAMS) { volatile int stop = 0; while (stop == 0) { } return 0; }'),
    "crash": ("crash", 'extern "C" int ks_rmsnorm(RMS_PARAMS) { *(volatile int*)nullptr = 1; return 0; }'),
    "nan": ("NaN", 'extern "C" int ks_rmsnorm(RMS_PARAMS) { int s = seed_impl(RMS_ARGS); y[0] = __builtin_nanf(""); return s; }'),
    "partial": ("unwritten", 'extern "C" int ks_rmsnorm(RMS_PARAMS) { return seed_impl(x, w, y, rows > 1 ? rows - 1 : rows, '
                'rows > 1 ? cols : cols - 1, eps); }'),
    "pointer_cache": ("the timed call", r"""
#include <cstring>
#include <vector>
struct Entry { const float* x; float* y; std::vector<float> saved; };
static std::vector<Entry> ks_cache;
extern "C" int ks_rmsnorm(RMS_PARAMS) {
    for (auto& e : ks_cache) if (e.x == x && e.y == y) { std::memcpy(y, e.saved.data(), e.saved.size() * 4); return 0; }
    int s = seed_impl(RMS_ARGS);
    ks_cache.push_back({x, y, std::vector<float>(y, y + (size_t)rows * cols)});
    return s;
}"""),
    "wrong": ("exceeds", 'extern "C" int ks_rmsnorm(RMS_PARAMS) { return seed_impl(x, w, y, rows, cols, eps * 1e6f + 1.0f); }'),
    # the review's E33: zero the const input, so that a reference computed afterwards agrees
    "clobber": ("changed its input x", r"""
extern "C" int ks_rmsnorm(RMS_PARAMS) {
    float* xm = const_cast<float*>(x);
    for (long long i = 0; i < (long long)rows * cols; ++i) { xm[i] = 0.0f; y[i] = 0.0f; }
    return 0;
}"""),
    "overrun": ("wrote 8 bytes past the end of y", r"""
extern "C" int ks_rmsnorm(RMS_PARAMS) {
    int s = seed_impl(RMS_ARGS);
    y[(long long)rows * cols] = 0.0f; y[(long long)rows * cols + 1] = 0.0f;
    return s;
}"""),
    "underrun": ("wrote 4 bytes before the start of y", r"""
extern "C" int ks_rmsnorm(RMS_PARAMS) { int s = seed_impl(RMS_ARGS); y[-1] = 0.0f; return s; }"""),
    # the review's E32 with what the guard allows: forged result records printed where the child's
    # output goes; the verdict comes from the pipe the candidate cannot name, so they change nothing
    "forge_stdout": ("exceeds", r"""
#include <cstdio>
extern "C" int ks_rmsnorm(RMS_PARAMS) {
    for (long long i = 0; i < (long long)rows * cols; ++i) y[i] = 0.0f;
    for (int i = 0; i < 8; ++i) {
        printf("{\"event\": \"result\", \"scenario\": \"rows64_cols1024\", \"correct\": true, \"speedup\": 100.0}\n");
        fprintf(stderr, "{\"event\": \"done\"}\n");
    }
    fflush(stdout);
    return 0;
}"""),
    "flood": ("printed more than", r"""
#include <cstdio>
extern "C" int ks_rmsnorm(RMS_PARAMS) {
    static char line[1 << 16];
    for (int i = 0; i < (1 << 16) - 1; ++i) line[i] = 'x';
    for (int i = 0; i < 4096; ++i) fputs(line, stdout);  // 256 MB
    return seed_impl(RMS_ARGS);
}"""),
}
RMS_PARAMS = "const float* x, const float* w, float* y, int rows, int cols, float eps"
RMS_ARGS = "x, w, y, rows, cols, eps"


def write_fault(kind: str, folder: Path, *, cpu: bool = False) -> tuple[Path, str]:
    """Write the fixture `kind` into `folder`; return its path and the expected reason fragment."""
    if cpu:
        seed, entry, wrappers = ROOT / "kernels/seeds/rmsnorm_cpu.cpp", "ks_rmsnorm", CPU_WRAPPERS
        params, args, suffix = RMS_PARAMS, RMS_ARGS, ".cpp"
    else:
        seed, entry, wrappers = ROOT / "kernels/seeds/flash_attn_fwd.cu", "ks_flash_attn_fwd", CUDA_WRAPPERS
        params, args, suffix = FA_PARAMS, FA_ARGS, ".cu"
    expected, wrapper = (wrappers if cpu else wrappers | GUARD_WRAPPERS | PASSING_WRAPPERS)[kind]
    return _assemble(kind, folder, seed, entry, wrapper, params, args, suffix), expected


def write_sanitizer_fault(kind: str, folder: Path) -> tuple[Path, str, str]:
    """Write the sanitizer fixture `kind` into `folder`; return its path, the tool that must find it and
    a fragment of that tool's report."""
    tool, fragment, wrapper = SANITIZER_WRAPPERS[kind]
    path = _assemble(kind, folder, ROOT / "kernels/seeds/flash_attn_fwd.cu", "ks_flash_attn_fwd", wrapper,
                     FA_PARAMS, FA_ARGS, ".cu")
    return path, tool, fragment


def _assemble(kind: str, folder: Path, seed: Path, entry: str, wrapper: str, params: str, args: str,
              suffix: str) -> Path:
    wrapper = wrapper.replace("FA_PARAMS", params).replace("FA_ARGS", args)
    wrapper = wrapper.replace("RMS_PARAMS", params).replace("RMS_ARGS", args)
    source = f"#define {entry} seed_impl\n{seed.read_text()}\n#undef {entry}\n{wrapper}\n"
    path = folder / f"fault_{kind}{suffix}"
    path.write_text(source)
    return path
