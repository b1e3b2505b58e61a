#!/usr/bin/env python3
"""Resource audit of the CUDA kernels from ptxas's own report (no cuobjdump needed).

Compiles each .cu for sm_80 and sm_90 with `-Xptxas -v --keep`, reads per kernel the registers,
static shared memory, stack frame and spills (ptxas) and the block size its __launch_bounds__
declares (.maxntid in the kept PTX), and checks that the declared launch fits each part:
threads x registers (allocated per warp in units of 256) <= 65536 per SM, static shared memory
<= 48 KiB per block and within the SM, and reports the resulting blocks per SM. Fails (exit 1)
on a spill, a kernel without __launch_bounds__, or a misfit. Dynamic shared memory: the project's
kernels use none (the emulator checks a launch's dynamic size against the opt-in at run time).

usage: scripts/cuda_resources.py [--markdown] [--nvcc PATH] FILE.cu...   (default: the project's)
"""
import argparse, concurrent.futures, glob, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Per-SM limits (CUDA C Programming Guide, "Technical Specifications per Compute Capability").
ARCH = {
    "sm_80": dict(regs=65536, smem_sm=164 * 1024, smem_block=48 * 1024, smem_optin=163 * 1024, threads=2048, blocks=32),
    "sm_90": dict(regs=65536, smem_sm=228 * 1024, smem_block=48 * 1024, smem_optin=227 * 1024, threads=2048, blocks=32),
}
RESERVED_SMEM = 1024  # per block, taken by the system on sm_8x/sm_9x


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def compile_one(nvcc, cu):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-I" + ROOT, "-O3", "-std=c++20", "--expt-relaxed-constexpr", "-DGPEN_WITH_CUDA=1", "-x", "cu",
               "-c", cu, "-o", os.path.join(tmp, "k.o"), "-gencode", "arch=compute_80,code=sm_80",
               "-gencode", "arch=compute_90,code=sm_90", "-Xptxas", "-v", "--keep", "--keep-dir", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return cu, None, r.stderr
        bounds = {}
        for ptx in glob.glob(os.path.join(tmp, "*.ptx")):
            # The launch bounds may differ per architecture (__CUDA_ARCH__): key them by it.
            arch = "sm_" + re.search(r"compute_(\d+)", os.path.basename(ptx)).group(1)
            entry = None
            for line in open(ptx):
                m = re.match(r"\.(?:visible )?\.?entry (\S+)\(", line.strip()) or re.match(r"\.entry (\S+)\(", line.strip())
                if m:
                    entry = arch + ":" + m.group(1)
                m = re.match(r"\s*\.maxntid (\d+), (\d+), (\d+)", line)
                if m and entry:
                    bounds[entry] = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
                m = re.match(r"\s*\.minnctapersm (\d+)", line)
                if m and entry:
                    bounds[entry + "#min"] = int(m.group(1))
        return cu, (r.stderr, bounds), None


def parse(stderr):
    kernels, cur = [], None
    for line in stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+)'", line)
        if m:
            cur = dict(mangled=m.group(1), arch=m.group(2), regs=0, smem=0, stack=0, spill=0)
            kernels.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill"] = int(m.group(1)), int(m.group(2)) + int(m.group(3))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    return kernels


def fit(k, threads):
    a = ARCH[k["arch"]]
    problems = []
    if k["spill"] > 0:
        problems.append("spills %d bytes" % k["spill"])
    if threads is None:
        problems.append("no __launch_bounds__")
        return problems, 0
    warps = (threads + 31) // 32
    regs_warp = ((max(k["regs"], 1) * 32 + 255) // 256) * 256
    if regs_warp * warps > a["regs"]:
        problems.append("%d threads x %d registers exceed 65536" % (threads, k["regs"]))
    if k["smem"] > a["smem_block"]:
        problems.append("static shared memory %d > 48 KiB" % k["smem"])
    by_regs = a["regs"] // (regs_warp * warps)
    by_smem = a["smem_sm"] // (k["smem"] + RESERVED_SMEM)
    blocks = min(a["blocks"], a["threads"] // threads, by_regs, by_smem)
    if blocks < 1:
        problems.append("no block fits an SM")
    return problems, blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (docs/cuda.md)")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "kernels/cuda/*.cu")) +
                                 glob.glob(os.path.join(ROOT, "engine/runtime/cuda/*.cu")))
    rows, failed = [], False
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for cu, res, err in ex.map(lambda f: compile_one(args.nvcc, f), files):
            if res is None:
                print("%s: nvcc failed:\n%s" % (cu, err), file=sys.stderr)
                failed = True
                continue
            stderr, bounds = res
            for k in parse(stderr):
                threads = bounds.get(k["arch"] + ":" + k["mangled"])
                problems, blocks = fit(k, threads)
                minb = bounds.get(k["arch"] + ":" + k["mangled"] + "#min")
                if minb and blocks < minb:
                    problems.append("%d blocks per SM < the %d __launch_bounds__ asks" % (blocks, minb))
                failed |= bool(problems)
                rows.append((os.path.relpath(cu, ROOT), k, threads, blocks, problems))
    names = demangle([r[1]["mangled"] for r in rows])
    if args.markdown:
        print("| file | kernel | arch | threads | registers | static smem | stack | spills | blocks/SM | problems |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (cu, k, threads, blocks, problems), name in zip(rows, names):
        name = re.sub(r"gpen::cuda::native::(\(anonymous namespace\)::)?", "", name)
        name = re.sub(r"\(.*\)$", "", name)
        if args.markdown:
            print("| %s | `%s` | %s | %s | %d | %d | %d | %d | %d | %s |" % (
                os.path.basename(cu), name, k["arch"], threads or "-", k["regs"], k["smem"], k["stack"], k["spill"],
                blocks, "; ".join(problems) or "fits"))
        else:
            print("%-22s %-60s %s threads=%-5s regs=%-3d smem=%-6d stack=%-4d spill=%-4d blocks/SM=%-2d %s" % (
                os.path.basename(cu), name[:60], k["arch"], threads, k["regs"], k["smem"], k["stack"], k["spill"],
                blocks, ("FAIL: " + "; ".join(problems)) if problems else "ok"))
    if not rows:
        print("no kernels found", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
