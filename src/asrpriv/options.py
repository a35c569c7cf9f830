"""Moved to :mod:`asrpriv.commands.options` (click code lives beside the commands).

A re-export for command modules written before the move; new code imports
``asrpriv.commands.options``. The library imports :mod:`asrpriv.talk` instead.
"""

from asrpriv.commands.options import *  # noqa: F401,F403
from asrpriv.commands.options import (FiniteFloat, check_output_path, common_options,  # noqa: F401
                                      info, is_quiet, is_verbose, output_option, seed_option,
                                      seeded_warning, warn)
