// fixture: a file outside the catalogue listing a block's matrices must be reported by
// scripts/check_catalogue.py
struct LayerWeights { const void *wq, *wk, *ffn_down; };
const char* kNames[] = {"blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.ffn_down.weight"};
