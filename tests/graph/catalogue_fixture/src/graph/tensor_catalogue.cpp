// fixture: the catalogue itself may list every tensor
const char* kNames[] = {"blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight", "blk.%d.ffn_down.weight"};
