"""The tool-rich worker's extra tools (`graphs/tool_rich.py`): the prevailing style the method is compared
with — an agent *equipped* rather than *asked*. Each tool is usable on its own (the functions below) and as
a worker tool (`TOOLS`, the `kernelseek.agent.tools.Tool` objects the graph offers beside the generic ones):

    profile        Nsight Compute's summary of the candidate, built by the harness and run on one scenario
                   in a child process with a time limit ("unavailable: <why>" without a GPU or ncu)
    compiled_code  a digest of the compiled code: per kernel, registers, spills, shared memory and stack from
                   the ptxas report, and the SASS instruction mix from `cuobjdump --dump-sass` when it is
                   there (for the CPU target: the entry point's x86 instruction mix from `objdump -d`)
    search_docs    plain-text retrieval over folders of documents the user points it at (no service)
    lessons        a JSON store in the run folder of what worked and what failed, across attempts

None of this imports the agent stack or LangGraph: the functions need the harness (torch) at most.
"""

from kernelseek.toolrich.digest import code_digest
from kernelseek.toolrich.lessons import LessonStore
from kernelseek.toolrich.profiler import profile_summary
from kernelseek.toolrich.retrieval import search_documents
from kernelseek.toolrich.tools import TOOLS

__all__ = ["TOOLS", "LessonStore", "code_digest", "profile_summary", "search_documents"]
