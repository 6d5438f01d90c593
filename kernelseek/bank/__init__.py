"""The question bank: data files under `bank/`, the auto-mode policy, and learning from human sessions.

    from kernelseek.bank import select_question, record_run_outcomes
    q = select_question("plateau", asked=["ls-launch"], seed=7)      # {id, text, kind, fits, source}
    record_run_outcomes(Path("runs/abc123"))                        # at run end; idempotent per run

The bank folder is `$KERNELSEEK_BANK` when set, else the repository's `bank/`.
"""

from kernelseek.bank.model import BankError, Question, default_bank_dir, load_bank
from kernelseek.bank.policy import record_run_outcomes, select_question

__all__ = ["BankError", "Question", "default_bank_dir", "load_bank", "record_run_outcomes",
           "select_question"]
