// fixture: hw/ including layout/ must be reported by scripts/check_layering.py
#include "layout/pim_layout.h"
