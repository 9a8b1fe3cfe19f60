#include "model/hf_config.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "model/arch_presets.h"

namespace duet::model {
namespace {

using nlohmann::json;

struct Family {
    const char* model_type;
    const char* architecture;  // architectures[0] as transformers writes it
    Arch arch;
    bool moe;
};

constexpr Family kFamilies[] = {
    {"llama", "LlamaForCausalLM", Arch::LLAMA, false},
    {"mistral", "MistralForCausalLM", Arch::LLAMA, false},
    {"qwen2", "Qwen2ForCausalLM", Arch::QWEN2, false},
    {"mixtral", "MixtralForCausalLM", Arch::LLAMA, true},
    {"qwen2_moe", "Qwen2MoeForCausalLM", Arch::QWEN2MOE, true},
    {"qwen3_moe", "Qwen3MoeForCausalLM", Arch::QWEN3MOE, true},
    {"deepseek_v2", "DeepseekV2ForCausalLM", Arch::DEEPSEEK2, true},
    {"deepseek_v3", "DeepseekV3ForCausalLM", Arch::DEEPSEEK2, true},
};

// Fields of training, tokenisation or bookkeeping: they change nothing duet models.
const std::set<std::string> kIgnored = {
    "_name_or_path", "architectures", "model_type", "auto_map", "transformers_version", "bos_token_id",
    "eos_token_id", "pad_token_id", "initializer_range", "attention_dropout", "hidden_dropout", "use_cache",
    "output_router_logits", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "pretraining_tp", "ep_size",
    "router_jitter_noise", "dtype", "torch_dtype", "tie_word_embeddings", "max_window_layers", "use_return_dict",
    "is_decoder", "return_dict", "bos_token", "eos_token", "use_mla", "qk_layernorm", "attention_bias",
};

// Read, not modelled, and changing no modelled cost: each present one is a warning with its reason.
struct Unmodelled {
    const char* field;
    const char* why;
};
constexpr Unmodelled kWarned[] = {
    {"rope_scaling", "RoPE frequency scaling changes the numbers, not the cost"},
    {"topk_method", "routing is modelled as uniform over the experts"},
    {"quantization_config", "weights are modelled in the settings' runtime.dtype"},
    {"mlp_bias", "a bias is a matmul epilogue, not a separate operator"},
    {"rope_interleave", "the RoPE pair order changes the numbers, not the cost"},
};

class Reader {
public:
    Reader(const json& j, std::string source) : j_(j), src_(std::move(source)) {}

    const json* find(const char* name) {
        seen_.insert(name);
        auto it = j_.find(name);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    std::optional<int64_t> opt_int(const char* name, int64_t lo, int64_t hi) {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number_integer())
            fail("{}: field '{}' = {} must be an integer (allowed: {}..{})", src_, name, v->dump(), lo, hi);
        const int64_t x = v->get<int64_t>();
        if (x < lo || x > hi) fail("{}: field '{}' = {} is out of range (allowed: {}..{})", src_, name, x, lo, hi);
        return x;
    }
    int64_t req_int(const char* name, int64_t lo, int64_t hi) {
        if (auto v = opt_int(name, lo, hi)) return *v;
        fail("{}: field '{}' is missing (an integer {}..{} is required)", src_, name, lo, hi);
    }
    std::optional<double> opt_num(const char* name) {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number()) fail("{}: field '{}' = {} must be a number", src_, name, v->dump());
        return v->get<double>();
    }
    std::optional<bool> opt_bool(const char* name) {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) fail("{}: field '{}' = {} must be true or false", src_, name, v->dump());
        return v->get<bool>();
    }
    std::optional<std::string> opt_str(const char* name) {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_string()) fail("{}: field '{}' = {} must be a string", src_, name, v->dump());
        return v->get<std::string>();
    }
    // Fields present but never read: warnings (known cost-free ones with their reason).
    void warn_rest(std::vector<std::string>& out) const {
        for (auto it = j_.begin(); it != j_.end(); ++it) {
            const std::string& k = it.key();
            if (seen_.count(k) || kIgnored.count(k) || it->is_null()) continue;
            const char* why = "duet does not know it; ignored";
            for (const auto& w : kWarned)
                if (k == w.field) why = w.why;
            out.push_back(fmt::format("{}: field '{}' is not modelled ({})", src_, k, why));
        }
    }
    const std::string& source() const { return src_; }

private:
    const json& j_;
    std::string src_;
    std::set<std::string> seen_;
};

const Family& family_of(Reader& r) {
    const json* mt = r.find("model_type");
    if (mt && mt->is_string()) {
        for (const Family& f : kFamilies)
            if (mt->get<std::string>() == f.model_type) return f;
        fail("{}: field 'model_type' = {} is not supported (supported: {})", r.source(), mt->dump(), hf_model_types());
    }
    if (mt) fail("{}: field 'model_type' = {} must be a string (supported: {})", r.source(), mt->dump(), hf_model_types());
    const json* ar = r.find("architectures");
    if (ar && ar->is_array() && !ar->empty() && (*ar)[0].is_string()) {
        for (const Family& f : kFamilies)
            if ((*ar)[0].get<std::string>() == f.architecture) return f;
        fail("{}: field 'architectures' = {} is not supported (supported model_type: {})", r.source(), ar->dump(),
             hf_model_types());
    }
    fail("{}: neither 'model_type' nor 'architectures' tells the model family (supported model_type: {})", r.source(),
         hf_model_types());
}

void read_attention(Reader& r, Hparams& hp) {
    hp.n_head = r.req_int("num_attention_heads", 1, 4096);
    hp.n_head_kv = r.opt_int("num_key_value_heads", 1, hp.n_head).value_or(hp.n_head);
    if (auto hd = r.opt_int("head_dim", 1, 4096)) {
        hp.head_dim = *hd;
    } else {
        if (hp.n_embd % hp.n_head != 0)
            fail("{}: field 'hidden_size' = {} is not a multiple of 'num_attention_heads' = {} and 'head_dim' is "
                 "missing",
                 r.source(), hp.n_embd, hp.n_head);
        hp.head_dim = hp.n_embd / hp.n_head;
    }
    hp.n_rot = hp.head_dim;
    if (auto f = r.opt_num("partial_rotary_factor"); f && *f != 1.0)
        fail("{}: field 'partial_rotary_factor' = {} is not modelled (allowed: 1.0)", r.source(), *f);
    if (auto sw = r.opt_bool("use_sliding_window"); sw && !*sw) {
        r.find("sliding_window");  // present but switched off (qwen2)
    } else if (auto w = r.opt_int("sliding_window", 1, int64_t(1) << 30); w && *w < hp.n_ctx_train) {
        fail("{}: field 'sliding_window' = {} is not modelled: it changes the attention cost beyond {} tokens "
             "(allowed: null, or at least max_position_embeddings = {})",
             r.source(), *w, *w, hp.n_ctx_train);
    }
}

void read_mla(Reader& r, Hparams& hp) {
    hp.q_lora_rank = r.opt_int("q_lora_rank", 1, 1 << 16).value_or(0);
    hp.kv_lora_rank = r.req_int("kv_lora_rank", 1, 1 << 16);
    hp.qk_rope_head_dim = r.req_int("qk_rope_head_dim", 2, 4096);
    hp.qk_nope_head_dim = r.req_int("qk_nope_head_dim", 1, 4096);
    hp.v_head_dim = r.req_int("v_head_dim", 1, 4096);
    hp.head_dim = hp.qk_nope_head_dim + hp.qk_rope_head_dim;
    hp.n_rot = hp.qk_rope_head_dim;
    hp.n_head_kv = hp.n_head;  // every head has its own K/V (up-projected from the shared latent)
}

void read_moe(Reader& r, const Family& f, Hparams& hp) {
    const std::string mt = f.model_type;
    const char* n_field = mt == "mixtral" ? "num_local_experts" : mt.rfind("deepseek", 0) == 0 ? "n_routed_experts"
                                                                                               : "num_experts";
    hp.n_expert = r.req_int(n_field, 1, 4096);
    hp.n_expert_used = r.req_int("num_experts_per_tok", 1, hp.n_expert);
    // Mixtral's experts are intermediate_size wide; the others name the expert width apart.
    hp.n_ff_exp = mt == "mixtral" ? hp.n_ff : r.req_int("moe_intermediate_size", 1, int64_t(1) << 22);
    if (mt == "mixtral") {
        hp.expert_weights_norm = true;  // softmax over the chosen experts' logits
    } else {
        hp.expert_weights_norm = r.opt_bool("norm_topk_prob").value_or(mt == "qwen3_moe");
    }
    if (mt == "qwen2_moe") {
        hp.n_ff_shexp = r.opt_int("shared_expert_intermediate_size", 0, int64_t(1) << 22).value_or(0);
        hp.n_expert_shared = hp.n_ff_shexp > 0 ? 1 : 0;
        hp.shared_expert_gate = hp.n_expert_shared > 0;
    }
    if (mt == "qwen2_moe" || mt == "qwen3_moe") {
        if (auto step = r.opt_int("decoder_sparse_step", 1, 4096); step && *step != 1)
            fail("{}: field 'decoder_sparse_step' = {} is not modelled (allowed: 1, every layer has experts)",
                 r.source(), *step);
        if (const json* only = r.find("mlp_only_layers"); only && !(only->is_array() && only->empty()))
            fail("{}: field 'mlp_only_layers' = {} is not modelled (allowed: [], every layer has experts)", r.source(),
                 only->dump());
    }
    if (mt.rfind("deepseek", 0) == 0) {
        hp.n_expert_shared = r.opt_int("n_shared_experts", 0, 4096).value_or(0);
        hp.n_ff_shexp = hp.n_expert_shared * hp.n_ff_exp;
        hp.n_layer_dense_lead = r.opt_int("first_k_dense_replace", 0, hp.n_layer).value_or(0);
        if (auto freq = r.opt_int("moe_layer_freq", 1, 4096); freq && *freq != 1)
            fail("{}: field 'moe_layer_freq' = {} is not modelled (allowed: 1, every layer after the dense ones)",
                 r.source(), *freq);
        hp.expert_weights_scale = float(r.opt_num("routed_scaling_factor").value_or(1.0));
        // Group-limited routing and the multi-token-prediction blocks: the real engine's rules
        // (model/hparams.h); a trace-only model routes uniformly and runs the n_layer main blocks.
        if (auto groups = r.opt_int("n_group", 1, hp.n_expert); groups && *groups > 1) {
            hp.n_expert_groups = *groups;
            hp.n_expert_groups_used = r.opt_int("topk_group", 1, *groups).value_or(*groups);
        } else {
            r.find("topk_group");  // one group: nothing to limit
        }
        hp.n_layer_nextn = r.opt_int("num_nextn_predict_layers", 0, 4096 - hp.n_layer).value_or(0);
        const std::string scoring = r.opt_str("scoring_func").value_or("softmax");
        if (scoring == "sigmoid") {
            hp.expert_gating = ExpertGating::SIGMOID;
        } else if (scoring != "softmax") {
            fail("{}: field 'scoring_func' = \"{}\" is not supported (allowed: softmax, sigmoid)", r.source(),
                 scoring);
        }
    }
}

}  // namespace

std::string hf_model_types() {
    std::string s;
    for (const Family& f : kFamilies) s += (s.empty() ? "" : ", ") + std::string(f.model_type);
    return s;
}

bool is_hf_config_path(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) return fs::is_regular_file(fs::path(path) / "config.json", ec);
    return path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

HfConfig parse_hf_config(std::string_view text, const std::string& source) {
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) fail("{}: not valid JSON (a Hugging Face config.json is one JSON object)", source);
    if (!j.is_object()) fail("{}: holds {}, not a JSON object (a Hugging Face config.json)", source, j.type_name());

    Reader r(j, source);
    const Family& f = family_of(r);
    HfConfig out;
    out.file = source;
    Hparams& hp = out.hparams;
    hp.arch = f.arch;
    hp.arch_name = arch_name(f.arch);
    hp.n_vocab = r.req_int("vocab_size", 1, int64_t(1) << 24);
    hp.n_ctx_train = r.req_int("max_position_embeddings", 1, int64_t(1) << 26);
    hp.n_embd = r.req_int("hidden_size", 1, int64_t(1) << 20);
    hp.n_layer = r.req_int("num_hidden_layers", 1, 4096);
    hp.n_ff = r.req_int("intermediate_size", 1, int64_t(1) << 22);
    hp.norm_eps = float(r.opt_num("rms_norm_eps").value_or(1e-6));
    hp.rope_freq_base = float(r.opt_num("rope_theta").value_or(10000.0));
    hp.tied_output = r.opt_bool("tie_word_embeddings").value_or(false);
    hp.rope_neox = hp.arch == Arch::QWEN2 || hp.arch == Arch::QWEN2MOE || hp.arch == Arch::QWEN3MOE;
    hp.qk_norm = hp.arch == Arch::QWEN3MOE;  // Qwen3's attention norms q and k per head (no config field)
    hp.qkv_bias = hp.arch == Arch::QWEN2 || hp.arch == Arch::QWEN2MOE || r.opt_bool("attention_bias").value_or(false);
    if (hp.arch == Arch::DEEPSEEK2) hp.qkv_bias = false;  // DeepSeek's attention_bias names no q/k/v bias we model
    if (const json* rs = r.find("rope_scaling"); rs && rs->is_object()) {
        const std::string type = rs->value("type", rs->value("rope_type", std::string()));
        if (type == "linear" && rs->contains("factor") && (*rs)["factor"].is_number() && (*rs)["factor"].get<double>() > 0)
            hp.rope_freq_scale = float(1.0 / (*rs)["factor"].get<double>());
        else
            out.warnings.push_back(fmt::format("{}: field 'rope_scaling' (type \"{}\") is not modelled (RoPE "
                                               "frequency scaling changes the numbers, not the cost)",
                                               source, type));
    }
    if (auto act = r.opt_str("hidden_act"); act && *act != "silu")
        out.warnings.push_back(fmt::format("{}: field 'hidden_act' = \"{}\" is not modelled (every activation costs "
                                           "as SwiGLU's silu)",
                                           source, *act));
    if (auto dt = r.opt_str("torch_dtype")) out.torch_dtype = *dt;
    else if (auto dt2 = r.opt_str("dtype")) out.torch_dtype = *dt2;

    read_attention(r, hp);
    if (hp.arch == Arch::DEEPSEEK2) read_mla(r, hp);
    if (f.moe) read_moe(r, f, hp);
    r.warn_rest(out.warnings);
    hp.validate(source);
    return out;
}

bool is_trace_only_model(const std::string& model) {
    return find_arch_preset(model) != nullptr || is_hf_config_path(model);
}

Hparams trace_only_hparams(const std::string& model) {
    if (const Hparams* p = find_arch_preset(model)) return *p;
    DUET_CHECK(is_hf_config_path(model), "trace_only_hparams: '{}' is neither a preset nor a config", model);
    HfConfig c = read_hf_config(model);
    for (const std::string& w : c.warnings) DUET_LOG_WARN("{}", w);
    return c.hparams;
}

HfConfig read_hf_config(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
    std::ifstream in(file, std::ios::binary);
    if (!in) fail("{}: cannot open the Hugging Face config (expected a config.json file or a directory holding one)", file);
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_hf_config(ss.str(), file);
}

}  // namespace duet::model
