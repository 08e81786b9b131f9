/* catalog.c — the benchmark datasets: one row each, the one place to change a prompt format.
 *
 * Per row: the file (under the data directory) and its manifest facts (records, bytes, sha256,
 * license; datasets/manifest.tsv repeats them for datasets/fetch and tests/test_dataset.c checks
 * that the two agree), the splits, the id and category fields, and the user turns: a field that
 * is an array of turns, or a one-turn template (syntax in dataset.c's header). Why each prompt is
 * what it is: datasets/README.md.
 *
 * Adding a dataset: a row here, a line in manifest.tsv, a first-record fact in test_dataset.c.
 */
#include "dataset_int.h"

/* MBPP splits: google-research mbpp/README.md ("Task IDs 11-510 are used for evaluation.
   Task IDs 1-10 and 511-1000 are used for training and/or prompting"); validation/train as in
   the HF loader. The prompt is the zero-shot form of the MBPP paper's prompt, as used by
   DeepSeek-Coder Evaluation/MBPP and bigcode-evaluation-harness (tests joined by "\n"). */
#define MBPP_PROMPT                                                                             \
    "You are an expert Python programmer, and here is your task: {text} Your code should pass " \
    "these tests:\n\n{test_list:lines}"
/* ClassEval holistic generation, FudanSELab/ClassEval generation/inference_pipeline.py. */
#define CLASSEVAL_PROMPT "Please complete the class {class_name} in the following code.\n{skeleton}"
#define SG_FIELDS "id", NULL, NULL, "{conversations[0].value}", "conversations[0].from", "human"
#define SG_LICENSE "Apache-2.0 (repo); ShareGPT terms"
/* Translation prompt for the Tatoeba sentence files (plain text, one sentence = one record):
   ALMA's zero-shot prompt (Xu et al., 2024), the DTE paper prints none for OPUS. */
#define TRANSLATE(SRC, TGT) "Translate this from " SRC " to " TGT ":\n" SRC ": {text}\n" TGT ":"
#define TATOEBA_LICENSE "CC-BY-2.0-FR (Tatoeba)"

/* name, file, records, bytes, sha256, license, splits,
   id, category, turns, prompt, keep field, keep value, summary */
const arb_dataset_info arb_dataset_catalog[] = {
    {"humaneval", "humaneval/HumanEval.jsonl.gz", 164, 44877,
     "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef", "MIT", "test,all",
     "task_id", NULL, NULL, "{prompt}", NULL, NULL,
     "HumanEval: the function signature + docstring"},
    {"gsm8k", "gsm8k/test.jsonl", 1319, 749738,
     "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14", "MIT", "test,all",
     NULL, NULL, NULL, "{question}", NULL, NULL, "GSM8K test: the question"},
    {"mbpp", "mbpp/mbpp.jsonl", 974, 563743,
     "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f", "CC-BY-4.0",
     "test=11-510,all,prompt=1-10,validation=511-600,train=601-974", "task_id", NULL, NULL,
     MBPP_PROMPT, NULL, NULL, "MBPP: task text + its 3 asserts (test = task_id 11..510)"},
    {"classeval", "classeval/ClassEval_data.json", 100, 2345518,
     "50a1ac0e4d0c238573c10c0ab11feae00b14a80ae9e4c9cc28148707ecf0b6a2", "CC-BY-NC-4.0",
     "test,all", "task_id", NULL, NULL, CLASSEVAL_PROMPT, NULL, NULL,
     "ClassEval: holistic instruction + class skeleton"},
    {"mt-bench", "mt-bench/question.jsonl", 80, 48929,
     "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7", "Apache-2.0",
     "test,all", "question_id", "category", "turns", NULL, NULL, NULL,
     "MT-Bench: two user turns per question"},
    {"spec-bench", "spec-bench/question.jsonl", 480, 698768,
     "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04", "Apache-2.0",
     "test,all", "question_id", "category", "turns", NULL, NULL, NULL,
     "Spec-Bench: MT-Bench (2 turns) + 5 tasks x 80 (1 turn)"},
    {"math500", "math500/test.jsonl", 500, 446564,
     "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132", "MIT", "test,all",
     "unique_id", "subject", NULL, "{problem}", NULL, NULL, "MATH500: the problem"},
    {"olympiadbench", "olympiadbench/test.jsonl", 675, 1493870,
     "bb8c1e38a16ea9eacb77530315a674d883f267fbff79183effc53681b4fcc416", "Apache-2.0",
     "test,all", "id", "subfield", NULL, "[[{context}\n\n]]{question}", NULL, NULL,
     "OlympiadBench OE_TO_maths_en_COMP: [context +] question"},
    {"sharegpt", "sharegpt/ShareGPT_V3_filtered_500.json", 500, 216075,
     "1dfcb9e6a6b794145128a3d2dd2f3c83aff8f11c806654e77aede2b0cda30e0e", SG_LICENSE, "test,all",
     SG_FIELDS, "ShareGPT V3: 500 first human turns"},
    {"sharegpt-1000", "sharegpt/ShareGPT_V3_filtered_1000.json", 1000, 863133,
     "68bf784305d30824de71732c59e53ebb00780e4fd136b0382cd7dee7f08ea5d3", SG_LICENSE, "test,all",
     SG_FIELDS, "ShareGPT V3: 1000 first human turns"},
    {"sharegpt-90k", "sharegpt/sg_90k_part1_html_cleaned_lang_first_sampled_sorted.json", 2978,
     2053294, "e95458dfb016a21e5ced20ced9b1694e8d8eeb7c9442005f588563fdd53318c9", SG_LICENSE,
     "test,all", SG_FIELDS, "ShareGPT sg_90k sample: non-empty first turns by a human (2957 of 2978)"},
    /* ---- the DTE paper's remaining datasets (issue #17; README "Prompt formats") ---- */
    {"livecodebench", "livecodebench/livecodebench_v5.jsonl", 279, 605470,
     "6441538a8f5f4d598480315fb5b0b4ca47489bfb7d496972e290d06e39679905", "Apache-2.0 (repo); LCB: cc",
     "test,all", "question_id", NULL, NULL, "{prompt}", NULL, NULL,
     "LiveCodeBench 2408-2502 (release_v5 subset): the official LCB prompt"},
    {"arc-challenge", "arc/ARC-Challenge-Test.jsonl", 1172, 443517,
     "a03a11a8fee86f6d0607f426e7b3b7a9180a4894170e934da75596e93c4b51f1", "CC-BY-SA-4.0", "test,all",
     "id", NULL, NULL, "Question: {question}\n{choices.text:abc}\nAnswer:", NULL, NULL,
     "ARC-Challenge test: question + lettered choices (3-5)"},
    {"arc-easy", "arc/arc_easy.jsonl", 2376, 636665,
     "d2d12e59543acf9a5ef6079634a72b30215e36c2fd4236fff3bc855d287b87f5", "CC-BY-SA-4.0", "test,all",
     NULL, NULL, NULL, "{query}\n{choices:abc}\nAnswer:", NULL, NULL,
     "ARC-Easy test (llm-foundry copy): question + lettered choices (4)"},
    {"alpacaeval", "alpaca/alpaca_eval.json", 805, 474865,
     "af0bc112f08c88bf589bbfe6fc1036806d0a0f6fec9c4d5a4db860f5afe73b4b", "CC-BY-NC-4.0", "test,all",
     NULL, "dataset", NULL, "{instruction}", NULL, NULL, "AlpacaEval: the 805 instructions"},
    {"alpaca", "alpaca/eagle_alpaca_question.jsonl", 80, 31220,
     "8ad3e5a7fc61b88d8e25edb81a52a2ce00a04494d5694c122cb11a5cc26a00df", "CC-BY-NC-4.0", "test,all",
     "question_id", NULL, "turns", NULL, NULL, NULL, "EAGLE's 80 Alpaca questions: one user turn"},
    {"tatoeba-en-de", "opus100/tatoeba-test-v2021-08-07.deu-eng.eng", 17565, 672653,
     "5d0e3169914a5e3f4ca7bdec670880f2025385c5a7e29547d9cbd7992105e77f", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("English", "German"), NULL, NULL, "Tatoeba deu-eng test: English -> German"},
    {"tatoeba-de-en", "opus100/tatoeba-test-v2021-08-07.deu-eng.deu", 17565, 782297,
     "a06d3300c05158e83bb5c1709a0bf5aecc2e28c895e66f03b1c914a7fdd8c8c6", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("German", "English"), NULL, NULL, "Tatoeba deu-eng test: German -> English"},
    {"tatoeba-en-fr", "opus100/tatoeba-test-v2021-08-07.eng-fra.eng", 12681, 458041,
     "714a848bd6ab4421cafd1b9b09fd26328306fab1bc8006e820fa77a8cbe57636", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("English", "French"), NULL, NULL, "Tatoeba eng-fra test: English -> French"},
    {"tatoeba-fr-en", "opus100/tatoeba-test-v2021-08-07.eng-fra.fra", 12681, 546578,
     "095313ff04016e5ddeff7557d1c5590f19724d239e424cab313b2d03ca66d365", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("French", "English"), NULL, NULL, "Tatoeba eng-fra test: French -> English"},
    {"tatoeba-en-es", "opus100/tatoeba-test-v2021-08-07.eng-spa.eng", 16583, 622066,
     "74da6b3ced819694959c14aadda79876abcd8d0aa6163a79fa4381bfb473c23e", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("English", "Spanish"), NULL, NULL, "Tatoeba eng-spa test: English -> Spanish"},
    {"tatoeba-es-en", "opus100/tatoeba-test-v2021-08-07.eng-spa.spa", 16583, 666192,
     "204c4d49224aa8bb974927daee66368c1b00068e3b6815fdba41d1265699cd93", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("Spanish", "English"), NULL, NULL, "Tatoeba eng-spa test: Spanish -> English"},
    {"tatoeba-en-it", "opus100/tatoeba-test-v2021-08-07.eng-ita.eng", 17320, 523406,
     "ef0c6a6d746c0d53e6496ac1073db91d4efe51d21c7a586bbbaa0f3660e938e4", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("English", "Italian"), NULL, NULL, "Tatoeba eng-ita test: English -> Italian"},
    {"tatoeba-it-en", "opus100/tatoeba-test-v2021-08-07.eng-ita.ita", 17320, 571767,
     "3735d63c036d6e7359c708c14c793f282ff84dd6f3c83353edb50085d0a958e1", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("Italian", "English"), NULL, NULL, "Tatoeba eng-ita test: Italian -> English"},
    {"tatoeba-en-zh", "opus100/tatoeba-test-v2021-08-07.eng-zho.eng", 10390, 384098,
     "75bb1a99ffa2410ae901f0c2aad376effc97fa116e5546b51e1a27793a7fc39e", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("English", "Chinese"), NULL, NULL, "Tatoeba eng-zho test: English -> Chinese"},
    {"tatoeba-zh-en", "opus100/tatoeba-test-v2021-08-07.eng-zho.zho", 10390, 353634,
     "af2b796d041e916ced5191392bf20ecbeac71e918613079680da1f7646561fd4", TATOEBA_LICENSE, "test,all", NULL, NULL, NULL,
     TRANSLATE("Chinese", "English"), NULL, NULL, "Tatoeba eng-zho test: Chinese -> English"},
    /* Training prompts for self-distillation (arbor distill, docs/heads.md): never an evaluation
       set. Their single split is "train", so no config can pick them up as a benchmark by default. */
    {"gsm8k-train", "gsm8k/train.jsonl", 7473, 4166206,
     "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465", "MIT", "train,all",
     NULL, NULL, NULL, "{question}", NULL, NULL, "GSM8K train: the question (distillation prompts)"},
    {"sharegpt-multiturn", "sharegpt-multiturn/ShareGPT_V3_unfiltered_cleaned_split.first5000.json",
     5000, 35812517, "f63f118ae826414b8400eff7d6eaf4e10185558f7a6bb7f2c62c0818eee99092", SG_LICENSE,
     "train,all", SG_FIELDS,
     "ShareGPT V3 unfiltered, first 5000 conversations: first turns by a human (distillation prompts)"},
};

const size_t arb_dataset_catalog_n = sizeof arb_dataset_catalog / sizeof arb_dataset_catalog[0];
