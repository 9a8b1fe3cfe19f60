#include "core/dtype.h"
